import { expect } from 'chai'
import { readdir, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { layout } from '../../network/layout.js'
import { kuboAdd } from '../../node/storage/kubo-add.js'
import { sharedNetwork } from '../support/shared-network.js'
import { get, nsBase, request, runId, waitConfirmedAll, type ApiMessage } from '../support/api.js'
import { downloadBlob, patternBytes, uploadBlob, type ApiBlobData } from '../support/upload.js'

const MiB = 1024 * 1024
const SIZE = 50 * MiB
const SEED = 20250110

/** Bytes under a folder, every file counted: the network's IPFS keeps its blocks in files there. */
async function folderBytes(dir: string): Promise<number> {
  let total = 0
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) total += (await stat(join(e.parentPath, e.name)).catch(() => ({ size: 0 }))).size
  }
  return total
}

describe('private blobs on a real 3-member network', function () {
  this.timeout(300_000)
  const t = sharedNetwork()
  const { members } = t
  const run = runId()
  const ns = `pblob-${run}`
  let hash: string
  let dataId: string
  let message: ApiMessage
  let ipfsBefore: number

  it('org0 uploads a 50 MiB blob and sends it privately to org1 (202)', async () => {
    const [org0, org1] = members
    ipfsBefore = await folderBytes(layout(t.dir).ipfsDir)
    const bytes = patternBytes(SIZE, SEED)
    const up = await uploadBlob(org0!, ns, bytes.stream, { filename: 'private.bin' })
    expect(up.status, JSON.stringify(up.body)).to.equal(200)
    hash = bytes.digest()
    expect(up.body.blob).to.deep.include({ hash, size: SIZE })
    dataId = up.body.id
    const sent = await request<ApiMessage>('POST', `${nsBase(org0!, ns)}/messages/private`, {
      header: { topics: [`blob-${run}`] },
      group: { members: [{ identity: org1!.org }] },
      data: [{ id: dataId }],
    })
    expect(sent.status, JSON.stringify(sent.body)).to.equal(202)
    message = sent.body
  })

  it('org1 (and org0) confirm it; org1 serves the blob with the same sha256 and size', async () => {
    const [org0, org1] = members
    await waitConfirmedAll(org1!, ns, [message.header.id], 180_000)
    await waitConfirmedAll(org0!, ns, [message.header.id], 60_000)
    const down = await downloadBlob(org1!, ns, dataId)
    expect(down.status).to.equal(200)
    expect(down.size).to.equal(SIZE)
    expect(down.sha256).to.equal(hash)
  })

  it('org2, outside the group, has neither the message nor the blob (404)', async () => {
    const org2 = members[2]!
    expect((await get(`${nsBase(org2, ns)}/messages/${message.header.id}`)).status).to.equal(404)
    expect((await downloadBlob(org2, ns, dataId)).status).to.equal(404)
  })

  it('the blob never went to IPFS: no data record has a public reference, IPFS cannot serve its CID, its folder did not grow by it', async () => {
    const [org0, org1] = members
    for (const m of [org0!, org1!]) {
      const d = await get<ApiBlobData>(`${nsBase(m, ns)}/data/${dataId}`)
      expect(d.status).to.equal(200)
      expect(d.body.blob?.hash).to.equal(hash)
      expect(d.body.blob, m.org).not.to.have.property('public')
    }
    // The CID a broadcast would have published the blob under (the publisher's own add options), computed without storing.
    const api = t.net.description.ipfs.api
    const cid = await kuboAdd(api, patternBytes(SIZE, SEED).stream, hash, { 'cid-version': '0', 'raw-leaves': 'false', pin: 'false', 'only-hash': 'true' })
    const cat = await request<{ Message?: string }>('POST', `${api}/api/v0/cat?arg=${cid}&length=1`)
    expect(cat.status, `IPFS holds the blob as ${cid}`).not.to.equal(200)
    // Definitions and other broadcasts add a few KiB; a published 50 MiB blob would add 50 MiB.
    const grown = (await folderBytes(layout(t.dir).ipfsDir)) - ipfsBefore
    expect(grown, 'IPFS state folder growth').to.be.below(10 * MiB)
  })
})
