'use strict'
// crawlq-wasm's build of the API: the WebAssembly module (wasm-bindgen --target nodejs) with
// Queue.connect over node-redis and the JavaScript protocols of the native addon installed.
// exports.js (the native addon's package's, shipped here too) names what the package exports.

const wasm = require('./node/crawlq_wasm.js')
const { installProtocols } = require('./protocol.js')
const { installConnect } = require('./connect.js')

installConnect(wasm.Queue, wasm.validateOptions, wasm)
installProtocols(wasm.Queue, wasm.Work)

module.exports = wasm
