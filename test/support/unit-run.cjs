// mocha's options for `npm run test:unit`: the project's (.mocharc.json), and every unit test file, slowest first
// (slowest-first.cjs).
'use strict'
const base = require('../../.mocharc.json')
const { slowestFirst } = require('./slowest-first.cjs')

module.exports = { ...base, spec: slowestFirst('test/unit') }
