// $expand, $lookup, $validate-code, $reindex-terminology (issue 6)
import type { OperationDef } from './types'

export const operations: OperationDef[] = []
