// $get-resource-counts (issue 6)
import type { OperationDef } from './types'

export const operations: OperationDef[] = []
