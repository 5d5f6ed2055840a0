// $expunge at system, type, instance and version level (issue 6)
import type { OperationDef } from './types'

export const operations: OperationDef[] = []
