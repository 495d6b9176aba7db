import { expect } from 'chai'
import { migrationChecksum } from '../../node/db/migrations.js'
import { migrations } from '../../node/db/schema/index.js'

/**
 * FROZEN. A failing test here means a shipped migration was rewritten: add a new migration instead.
 *
 * Every state folder in the field recorded these checksums when it ran these migrations, and a node
 * refuses a folder whose recorded checksum differs from its own migration's. Rewriting one (or changing
 * how checksums are computed) would lock every existing member out of its data. Only versions already
 * shipped are pinned; migrations appended after them are free until they ship, then get pinned here.
 */
const SHIPPED: ReadonlyMap<number, string> = new Map([
  [1, '31ec9fe96f70792ece00332cc0cef760b5d4c3bd3c435d0facf197ccd4ed76e0'],
  [2, 'e5f3cf5b431f68945db9ade3e95e4e7db65a6eb4cedc801d228d1a80ca642dc4'],
  [3, 'c1ab4100ccd4a97a0d51a9875f53d2f10e27d3f9bffb0dd29e61e2011a48beb8'],
  [4, '63f057cb167262a22c8eae26c3c6cc43b0da7c1cc73d387e12d8990a623e662e'],
  [5, '63a0e5dad7d5031a0ebcc67424dfb98551c86c69e0ac2122d92f548cb9172521'],
  [6, 'ab8dcdb9e1feed23cbe4bf5f77b800cf8fa3497794c9a6b0e5434d0df5d01a48'],
  [7, '8e5281251b1b4bcfc3f6ca7105eafa70c9e3d8ad1dbf3eb37088fc40a4846c57'],
  [8, 'bdd6080806f47ab0e659bed9f65ab6dc77398e092bff7246d566a1a3833352fb'],
  [9, '6a70f6a55c3c989fa765a1d6f7a4ecb238ec0bafbe7f41fecfbfed463c0dc00b'],
  [10, '72f649fd1236862d13601836a13b621249c88ecc5ba3f5f44711d1d86129c34d'],
  [11, '7c379fa1b564b0ddadf07948edfe00917ac6b2f0d7e5156dff384ea454b57cbc'],
  [12, '4d85bba98f070ac1c7c6b1dd00e19dd0bd6869d923fa6e12de8b3dee95373979'],
  [13, '69e8676858479e50e24ddb3979540900e9f1524b89426e661c2d2605ab77812d'],
  [14, '46eab7dab5993aa39c47a3c7aa041bc90b91f4f0a467ac0e445a16f825c9023b'],
  [15, '0b12ea503c6aca20aeb91b832b2cffd7d559ccb4e2018575ed19beb54d779fe9'],
  [16, '8b31117eeecad0675105cf7a6308287e3be543119b5adb65a923725d00443ad5'],
  [17, '0091bada9e3eb39a441610f52fb34cfe2e9801b60e99b48beb67bb4cdce5a3e5'],
  [18, '2bd266d0f9180c52435822934dd85a664c6a675d0d3b42072f4e90c17f78368a'],
  [19, '0b3de3faf1d9d88136e05703259964587fa6e8f01c5867b75b93c2b99849031a'],
  [20, 'ed5d0a7272741cad74800acc98e62050e0e561dae6529ea7f9088f1b74adf1a9'],
  [21, 'c7e9c851277352fe720131968380d9ccf131795891b08beeeaff8fc3a5a0996c'],
  [22, '42904edc2cc74552205ac6dfe88822024fdda769dfce048630fbfee011528fb6'],
  [23, 'e0ddaec31a3eff8cb45394ff950d4bdedf217fefe79eae939d9085c4ad2953a5'],
])
const NEWEST_SHIPPED = Math.max(...SHIPPED.keys())

describe('db: shipped migrations are never rewritten', function () {
  it('still has every shipped version', function () {
    const present = migrations.map((m) => m.version).filter((v) => v <= NEWEST_SHIPPED)
    expect(present.sort((a, b) => a - b)).to.deep.equal([...SHIPPED.keys()])
  })

  for (const [version, checksum] of SHIPPED) {
    it(`migration ${version} has the SQL it shipped with`, function () {
      const m = migrations.find((x) => x.version === version)
      if (!m) return expect.fail(`migration ${version} is gone`)
      expect(migrationChecksum(m), `migration ${version} (${m.name})`).to.equal(checksum)
    })
  }
})
