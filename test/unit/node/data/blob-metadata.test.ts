import { expect } from 'chai'
import { autometaValue, blobName, metadataValue } from '../../../../node/data/blob-metadata.js'

describe('blob metadata (FireFly upload value rules)', () => {
  it('metadata: JSON verbatim (compacted), anything else as a JSON string, empty as no value', () => {
    expect(metadataValue('{ "b": 1, "a": [1.50] }')).to.equal('{"b":1,"a":[1.50]}')
    expect(metadataValue('plain "text" \\ <b>')).to.equal('"plain \\"text\\" \\\\ \\u003cb\\u003e"')
    expect(metadataValue('42')).to.equal('42')
    expect(metadataValue('')).to.equal(null)
    expect(metadataValue(' null ')).to.equal(null)
    expect(metadataValue(undefined)).to.equal(null)
  })

  it('autometa: sorted keys at every level, Go float64 numbers, last duplicate wins, non-objects become {}', () => {
    const meta = { filename: 'f.txt', mimetype: 'text/plain', size: 3 }
    expect(autometaValue('{"z":{"b":1,"a":2},"m":[{"y":1,"x":1e3}],"k":1,"k":2,"n":-0.0,"t":1e-7}', meta)).to.equal(
      '{"filename":"f.txt","k":2,"m":[{"x":1000,"y":1}],"mimetype":"text/plain","n":-0,"size":3,"t":1e-7,"z":{"a":2,"b":1}}',
    )
    expect(autometaValue('"just a string"', meta)).to.equal('{"filename":"f.txt","mimetype":"text/plain","size":3}')
    expect(autometaValue('[1,2]', meta)).to.equal('{"filename":"f.txt","mimetype":"text/plain","size":3}')
    expect(autometaValue('{"big":1e400,"a":1}', meta), 'Go cannot decode it into a map').to.equal('{"filename":"f.txt","mimetype":"text/plain","size":3}')
    expect(autometaValue(null, meta)).to.equal('{"filename":"f.txt","mimetype":"text/plain","size":3}')
    expect(autometaValue('{"filename":"given","size":"x"}', meta), 'the upload overrides').to.equal('{"filename":"f.txt","mimetype":"text/plain","size":3}')
  })

  it('blob name: name, else path/filename, else filename, else empty', () => {
    expect(blobName('{"name":"n","path":"p","filename":"f"}')).to.equal('n')
    expect(blobName('{"path":"p","filename":"f"}')).to.equal('p/f')
    expect(blobName('{"filename":"f"}')).to.equal('f')
    expect(blobName('{"path":"p"}')).to.equal('')
    expect(blobName('{"name":1}')).to.equal('')
    expect(blobName('"s"')).to.equal('')
    expect(blobName(null)).to.equal('')
  })
})
