// $reindex, $mark-all-resources-for-reindexing, $perform-reindexing-pass (issue 6)
import type { OperationDef } from './types'

export const operations: OperationDef[] = []
