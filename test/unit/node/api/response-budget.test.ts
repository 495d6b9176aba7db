import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { assertPageFits, RESPONSE_VALUE_BYTES } from '../../../../node/api/response-budget.js'
import { ParleyError } from '../../../../node/core/errors.js'
import { dataHash } from '../../../../node/core/hashes.js'
import { newId, type DataId } from '../../../../node/core/ids.js'
import { now } from '../../../../node/core/time.js'
import { openRepos, type Repos } from '../../../support/repos.js'

describe('list answers and the size of their values', () => {
  it('refuses a page of several items whose values pass the budget as a 400 saying how many would fit', () => {
    expect(() => assertPageFits({ items: 200, bytes: 200 * 15 * 1024 * 1024 }, 200)).to.throw(ParleyError, /the 200 items asked for \(limit=200\) carry 3145728000 bytes of data values; .* ask for fewer \(about limit=4\)/)
    // One item always fits; a page within the budget passes.
    assertPageFits({ items: 1, bytes: RESPONSE_VALUE_BYTES * 2 }, 1)
    assertPageFits({ items: 200, bytes: RESPONSE_VALUE_BYTES }, 200)
  })

  describe('counted by the database without reading the values out', () => {
    let dir: string
    let repos: Repos
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'parley-budget-'))
      repos = await openRepos(dir)
      await repos.db.transaction((tx) => {
        for (const value of ['"\\u003c"', '{"é":1}', '[1,2,3]']) {
          repos.data.insert(tx, { id: newId<DataId>(), validator: 'json', namespace: 'default', hash: dataHash({ valueRaw: value }), created: now(), value }, true)
        }
      })
    })
    after(async () => {
      await repos.db.close()
      rmSync(dir, { recursive: true, force: true })
    })

    it('a list page: its items and the UTF-8 bytes of their values', () => {
      expect(repos.data.listValueBytes('default', { limit: 10, skip: 0 })).to.deep.equal({ items: 3, bytes: 8 + 8 + 7 })
      expect(repos.data.listValueBytes('default', { limit: 2, skip: 1 })).to.deep.equal({ items: 2, bytes: 8 + 8 })
      expect(repos.data.listValueBytes('other', { limit: 10, skip: 0 })).to.deep.equal({ items: 0, bytes: 0 })
    })

    it('the items an answer names, counted as often as it repeats them', () => {
      const ids = repos.data.list('default', { limit: 10, skip: 0 }).map((d) => ({ id: d.id, hash: d.hash }))
      // The newest first: '[1,2,3]' (7 bytes) named twice, as two messages sharing an upload would.
      expect(repos.data.valueBytes([...ids, ids[0]!])).to.equal(23 + 7)
      expect(repos.data.valueBytes([])).to.equal(0)
    })
  })
})
