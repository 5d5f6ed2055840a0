// $meta, $meta-add, $meta-delete (issue 6)
import type { OperationDef } from './types'

export const operations: OperationDef[] = []
