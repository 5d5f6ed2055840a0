// Patient/$everything (issue 7)
import type { OperationDef } from './types'

export const operations: OperationDef[] = []
