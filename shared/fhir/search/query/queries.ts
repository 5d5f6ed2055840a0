// The search engine as the interactions and operations use it: one object over the database, named
// for what it answers, so that none of them hands the repository's connection to search internals.
// The router builds it per request (router.ts), over a view of the pool made on its first statement.
import { type Sql, withCustomPlans } from '../../../db/client'
import type { Fragment } from '../../../db/fragments'
import { needsCustomPlan } from './compile'
import { DRIVE_BUDGET } from './bounded'
import { type Cursor, runSearch, type SearchPage, searchWhere } from './execute'
import { type MetaInUse, metaInUse } from './meta-in-use'
import type { SearchQuery } from './query'
import { typeSize } from './type-sizes'

export class SearchQueries {
  private opened?: Sql

  /** `open`: the database, asked for on the first statement (router.ts makes its view of the pool then:
   *  a request that searches nothing makes none). */
  constructor(private readonly open: () => Sql) {}

  private get sql(): Sql {
    if (!this.opened) this.opened = this.open()
    return this.opened
  }

  /** One page of matches, with the page's includes and the total asked for (execute.ts). */
  async page(q: SearchQuery, baseUrl: string, cursor?: Cursor): Promise<SearchPage> {
    // A type smaller than the drive budget is searched by the plain statement (type-sizes.ts), unless
    // a _has names many sources: the plain statement finds them all (Patient?_has:Observation:subject:
    // status=final read every final Observation, 450,000 buffers, for 470 Patients).
    // A chain likewise (Goal?patient:Patient.gender=female read 218,000 buffers for 800 Goals).
    const custom = needsCustomPlan(q.criteria)
    const linked = custom || q.criteria.some((c) => c.kind === 'chain')
    let size = q.types.length === 1 && !linked ? typeSize(this.sql, q.types[0]) : 0
    if (typeof size !== 'number') size = await size
    const bounded = q.types.length === 1 && (linked || size >= DRIVE_BUDGET)
    return custom ? withCustomPlans(this.sql, (tx) => runSearch(tx, q, baseUrl, cursor, bounded)) : runSearch(this.sql, q, baseUrl, cursor, bounded)
  }

  /** The condition on `resource r0` that selects the matches of `q`, for work that pages them itself. */
  where(q: SearchQuery, baseUrl: string): Fragment {
    return searchWhere(this.sql, q, baseUrl)
  }

  /** Tags, security labels and profiles in use by current resources, of one type or all ($meta). */
  metaInUse(type?: string): Promise<MetaInUse> {
    return metaInUse(this.sql, type)
  }
}
