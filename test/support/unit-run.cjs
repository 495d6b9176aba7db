// mocha's options for `npm run test:unit`: the project's (.mocharc.json), and every unit test file, slowest first
// (slowest-first.cjs).
//
// The run's temporary folders (databases and their journals, the run's PostgreSQL cluster, blobs) are made in memory
// where the machine has a tmpfs at /dev/shm, unless TMPDIR says where: a unit test asks what a process reads back,
// never what survives a power cut (test/db does, on the disk), and each fsync on a shared disk is a wait of
// milliseconds. The workers mocha forks inherit it.
'use strict'
const { accessSync, constants } = require('node:fs')
const base = require('../../.mocharc.json')
const { slowestFirst } = require('./slowest-first.cjs')

const MEMORY = '/dev/shm'

function writable(dir) {
  try {
    accessSync(dir, constants.W_OK)
    return true
  } catch {
    return false
  }
}

if (process.env.TMPDIR === undefined && writable(MEMORY)) process.env.TMPDIR = MEMORY

module.exports = { ...base, spec: slowestFirst('test/unit') }
