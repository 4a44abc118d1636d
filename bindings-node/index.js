'use strict'
// The package entry: the names of exports.js (the native addon's build of the API, binding.js).
// `module.exports = require(...)` is a form Node.js follows for the named exports of an ES
// module import.

module.exports = require('./exports.js')
