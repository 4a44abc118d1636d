'use strict'
// The package's names, shared by crawlq and crawlq-wasm (each ships this file): binding.js is
// the package's own build of the API (the native addon, or the WebAssembly module), index.js
// re-exports this file. Spelled out one by one, so Node.js finds them as named exports when an
// ES module imports the CommonJS entry; test/queue.test.js checks the list against
// protocol.js's API_NAMES.

const binding = require('./binding.js')

exports.Queue = binding.Queue
exports.Work = binding.Work
exports.normalize = binding.normalize
exports.shardOf = binding.shardOf
exports.requestOf = binding.requestOf
exports.requestPayload = binding.requestPayload
exports.requestUpdate = binding.requestUpdate
exports.defaultOptions = binding.defaultOptions
exports.frameworkOptions = binding.frameworkOptions
exports.redactedUrl = binding.redactedUrl
