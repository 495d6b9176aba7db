import { useEffect, useRef, useState } from 'preact/hooks'
import { apiGetList, errorText, type Params } from './api'
import { onEvent } from './events'
import { ns } from './state'
import type { ApiEvent } from './types'

export const PAGE_SIZE = 25
/** Live refreshes are coalesced: a burst of events costs one request per this many ms. */
const REFRESH_MS = 400

export interface PagedList<T> {
  items: T[]
  error: string | undefined
  loaded: boolean
  skip: number
  setSkip: (skip: number) => void
}

/**
 * One server-paged list (`limit`/`skip`, so a namespace of 10,000 messages costs one page), fetched again when
 * its query changes and, coalesced, when an event arrives that `refreshOn` says may change it.
 */
export function usePagedList<T>(
  path: string,
  params: Params,
  refreshOn: (e: ApiEvent) => boolean = () => true,
  /** Also read again this often (for what no event announces, e.g. subscriptions); none by default. */
  pollMs?: number,
): PagedList<T> {
  const [items, setItems] = useState<T[]>([])
  const [error, setError] = useState<string | undefined>(undefined)
  const [loaded, setLoaded] = useState(false)
  const key = JSON.stringify([ns.value, path, params])
  // The page belongs to its query: a new query starts from its first page at once (never fetching the old skip).
  const [page, setPage] = useState({ key, skip: 0 })
  const skip = page.key === key ? page.skip : 0
  const setSkip = (next: number) => setPage({ key, skip: next })
  const refresh = useRef(refreshOn)
  refresh.current = refreshOn

  useEffect(() => {
    let live = true
    let timer: ReturnType<typeof setTimeout> | undefined
    let running = false
    let again = false
    const load = async (): Promise<void> => {
      if (running) {
        again = true
        return
      }
      running = true
      try {
        const page = await apiGetList<T>(path, { ...params, limit: PAGE_SIZE, skip })
        if (!live) return
        setItems(page)
        setError(undefined)
      } catch (err) {
        if (live) setError(errorText(err))
      } finally {
        running = false
        if (live) setLoaded(true)
        if (again && live) {
          again = false
          void load()
        }
      }
    }
    void load()
    const off = onEvent((e) => {
      if (!refresh.current(e) || timer !== undefined) return
      timer = setTimeout(() => {
        timer = undefined
        void load()
      }, REFRESH_MS)
    })
    const poll = pollMs === undefined ? undefined : setInterval(() => void load(), pollMs)
    return () => {
      live = false
      clearTimeout(timer)
      clearInterval(poll)
      off()
    }
  }, [key, skip, pollMs])

  return { items, error, loaded, skip, setSkip }
}
