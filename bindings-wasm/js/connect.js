'use strict'
// Queue.connect(url, name, options) for the WebAssembly build: check the options in the
// core, connect a node-redis transport, and build the queue over it, so the API is the same
// as the native addon's.

const { nodeRedisTransport } = require('./adapters/node-redis.js')
const { redactedUrl, useCore } = require('./adapters/common.js')

const CODES = { config: 'ERR_CRAWLQ_CONFIG', timeout: 'ERR_CRAWLQ_TIMEOUT', server: 'ERR_CRAWLQ_SERVER' }

/** A transport's connect failure as the error the native addon would reject with. */
function connectError (err, wasm) {
  if (err && typeof err.code === 'string' && err.code.startsWith('ERR_CRAWLQ_')) return err
  const kind = (err && err.kind) || 'unavailable'
  const out = new Error(wasm.connectFailureMessage(kind, err && err.message ? err.message : String(err)), { cause: err })
  out.code = CODES[kind] ?? 'ERR_CRAWLQ_UNAVAILABLE'
  return out
}

/**
 * This build's transports talk to one Redis server; a Redis Cluster node would answer MOVED to
 * most calls. Say so at connect, typed, instead.
 */
async function refuseCluster (transport, url) {
  let info = ''
  try {
    info = String(await transport.run(['CLUSTER', 'INFO']))
  } catch {
    return // not a cluster node (or CLUSTER is not allowed): a plain server
  }
  if (info.includes('cluster_state:')) {
    const err = new Error(`${redactedUrl(url)} is a Redis Cluster node: the WebAssembly build drives one Redis server only; use the native addon (require('crawlq')) for a cluster`)
    err.code = 'ERR_CRAWLQ_CONFIG'
    throw err
  }
}

function installConnect (Queue, validateOptions, wasm) {
  useCore(wasm)
  Queue.connect = async function connect (url, name, options) {
    validateOptions(options, name, String(url))
    let transport
    try {
      transport = await nodeRedisTransport(url, options ?? {})
    } catch (err) {
      throw connectError(err, wasm)
    }
    try {
      await refuseCluster(transport, url)
      const queue = new Queue(transport, name, options)
      await queue._open()
      return queue
    } catch (err) {
      await transport.close().catch(() => {})
      throw err
    }
  }
}

module.exports = { installConnect, connectError }
