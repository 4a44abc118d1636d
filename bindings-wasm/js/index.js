'use strict'
// crawlq-wasm, CommonJS entry: the names every crawlq package exports (exports.js, over this
// package's binding.js), and the transports over node-redis and ioredis. Node.js follows
// `module.exports = require(...)` and `module.exports.name =` for the named exports of an ES
// module import.

module.exports = require('./exports.js')
module.exports.nodeRedisTransport = require('./adapters/node-redis.js').nodeRedisTransport
module.exports.ioredisTransport = require('./adapters/ioredis.js').ioredisTransport
