import { ParleyError } from '../core/errors.js'

/**
 * The most data-value bytes one list answer carries. A page is built whole before it is sent, and one JavaScript
 * string holds at most ~512 MiB, so a page of large values must be refused up front: as a 400 that says how many
 * items would fit, not a 500 from the serializer. One item always fits (a value is smaller than a batch).
 */
export const RESPONSE_VALUE_BYTES = 64 * 1024 * 1024

export function assertPageFits(page: { items: number; bytes: number }, limit: number): void {
  if (page.items <= 1 || page.bytes <= RESPONSE_VALUE_BYTES) return
  const perItem = page.bytes / page.items
  const fits = Math.max(1, Math.floor(RESPONSE_VALUE_BYTES / perItem))
  throw new ParleyError(
    'INVALID_FIELD',
    `the ${page.items} items asked for (limit=${limit}) carry ${page.bytes} bytes of data values; one answer carries at most ${RESPONSE_VALUE_BYTES}: ask for fewer (about limit=${fits}), or read values one by one`,
  )
}
