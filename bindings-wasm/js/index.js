'use strict'
// crawlq-wasm, CommonJS entry: the WebAssembly build (wasm-bindgen --target nodejs) with
// Queue.connect over node-redis and the JavaScript protocols of the native addon.

const wasm = require('./node/crawlq_wasm.js')
const { installProtocols } = require('./protocol.js')
const { installConnect } = require('./connect.js')
const { nodeRedisTransport } = require('./adapters/node-redis.js')
const { ioredisTransport } = require('./adapters/ioredis.js')

installConnect(wasm.Queue, wasm.validateOptions)
installProtocols(wasm.Queue, wasm.Work)

// Spelled out one by one, so Node.js finds them as named exports of this CommonJS file when it
// is imported; test/queue.test.js checks the list against protocol.js's API_NAMES.
exports.Queue = wasm.Queue
exports.Work = wasm.Work
exports.normalize = wasm.normalize
exports.shardOf = wasm.shardOf
exports.requestOf = wasm.requestOf
exports.requestPayload = wasm.requestPayload
exports.requestUpdate = wasm.requestUpdate
exports.defaultOptions = wasm.defaultOptions
exports.frameworkOptions = wasm.frameworkOptions
exports.nodeRedisTransport = nodeRedisTransport
exports.ioredisTransport = ioredisTransport
