'use strict'
// A crawlq transport over the npm `ioredis` client.

const fs = require('node:fs')
const { checkUrl, ClientTransport, connectFailure, kindError, unixSocket, urlError } = require('./common.js')

function loadIoredis () {
  try {
    return require('ioredis')
  } catch (err) {
    throw kindError('config', 'the ioredis transport needs the npm package `ioredis` (npm install ioredis)', err)
  }
}

/** Connect with ioredis and return a transport (same options as nodeRedisTransport). */
async function ioredisTransport (url, options = {}) {
  checkUrl(url)
  const { default: Redis, ReplyError } = loadIoredis()
  // ioredis takes a unix socket as `path`, not as a URL
  const unix = unixSocket(url)
  const connect = async () => {
    let client
    try {
      const settings = {
        ...(unix ? { path: unix.path, db: unix.db } : {}),
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 1,
        connectTimeout: options.connectTimeoutMs ?? 5000,
        retryStrategy: times => (times > 3 ? null : Math.min(50 * 2 ** times, 1000)),
        ...(options.tlsCaFile ? { tls: { ca: fs.readFileSync(options.tlsCaFile) } } : {})
      }
      client = unix ? new Redis(settings) : new Redis(url, settings)
    } catch (err) {
      throw urlError(url, err)
    }
    // ioredis rejects connect() with "Connection is closed." and says why only in an event:
    // the first one (ECONNREFUSED, a parser's protocol error), not the errors of the commands
    // it then fails ("Stream isn't writeable")
    let why = null
    client.on('error', err => { why = why ?? err })
    try {
      await client.connect()
      // ioredis selects the URL's database once ready and goes on in database 0 when the
      // server refuses it: select it here, so a database the server lacks fails the connect
      if (client.options.db) await client.select(client.options.db)
      // a server that wants a password accepts the connection and refuses its first command
      await client.call('PING')
    } catch (err) {
      client.disconnect()
      throw connectFailure(url, why ?? err, e => e instanceof ReplyError)
    }
    return {
      run: ([command, ...args]) => client.call(command, ...args),
      close: async () => { client.disconnect() }
    }
  }
  const main = await connect()
  return new ClientTransport({
    run: main.run,
    duplicate: connect,
    isReplyError: err => err instanceof ReplyError,
    close: main.close,
    commandTimeoutMs: options.commandTimeoutMs ?? 10000,
    retryForMs: Math.max(options.connectTimeoutMs ?? 5000, options.commandTimeoutMs ?? 10000)
  })
}

module.exports = { ioredisTransport }
