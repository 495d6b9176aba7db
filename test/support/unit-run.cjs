// mocha's options for `npm run test:unit`: the project's (.mocharc.json), and every unit test file, slowest first
// (slowest-first.cjs).
//
// The run's temporary folders (databases and their journals, the run's PostgreSQL cluster, blobs) are made in memory
// where the machine has a tmpfs at /dev/shm with room for them, unless TMPDIR says where: a unit test asks what a
// process reads back, never what survives a power cut (test/db does, on the disk), and each fsync on a shared disk is
// a wait of milliseconds. The workers mocha forks inherit it.
'use strict'
const { accessSync, constants, statfsSync } = require('node:fs')
const base = require('../../.mocharc.json')
const { slowestFirst } = require('./slowest-first.cjs')

const MEMORY = '/dev/shm'
/** What the run may hold at once (a 70 MB journal and its snapshot, PostgreSQL's clusters); a container's 64 MiB is not. */
const ROOM_BYTES = 2 * 1024 ** 3

function roomy(dir) {
  try {
    accessSync(dir, constants.W_OK)
    const fs = statfsSync(dir)
    return fs.bavail * fs.bsize >= ROOM_BYTES
  } catch {
    return false
  }
}

if (process.env.TMPDIR === undefined && roomy(MEMORY)) process.env.TMPDIR = MEMORY

module.exports = { ...base, spec: slowestFirst('test/unit') }
