'use strict'
// A crawlq transport over the npm `redis` client (node-redis v5).

const fs = require('node:fs')
const { checkUrl, ClientTransport, connectFailure, kindError, unixSocket, urlError } = require('./common.js')

function loadRedis () {
  try {
    return require('redis')
  } catch (err) {
    throw kindError('config', 'the node-redis transport needs the npm package `redis` (npm install redis)', err)
  }
}

/**
 * Connect with node-redis and return a transport. `options` are the queue's options; the
 * connection ones (connectTimeoutMs, commandTimeoutMs, tlsCaFile) are used here.
 */
async function nodeRedisTransport (url, options = {}) {
  checkUrl(url)
  const { createClient, ErrorReply } = loadRedis()
  // node-redis takes a unix socket as `socket.path`, not as a URL ("Invalid protocol")
  const unix = unixSocket(url)
  const connect = async () => {
    let client
    try {
      client = createClient({
        ...(unix ? { database: unix.db } : { url }),
        disableOfflineQueue: true,
        socket: {
          ...(unix ? { path: unix.path } : {}),
          connectTimeout: options.connectTimeoutMs ?? 5000,
          reconnectStrategy: (retries, cause) => (retries >= 3 ? cause : Math.min(50 * 2 ** retries, 1000)),
          ...(options.tlsCaFile ? { tls: true, ca: fs.readFileSync(options.tlsCaFile) } : {})
        }
      })
    } catch (err) {
      throw urlError(url, err)
    }
    client.on('error', () => {}) // failures surface through the commands
    try {
      await client.connect()
      // a server that wants a password accepts the connection and refuses its first command
      await client.sendCommand(['PING'])
    } catch (err) {
      if (client.isOpen) client.destroy()
      // what the reconnect strategy gave up on: the server's reply or the socket's error
      throw connectFailure(url, err.originalError ?? err, e => e instanceof ErrorReply)
    }
    return {
      run: args => client.sendCommand(args),
      close: () => (client.isOpen ? client.close() : Promise.resolve())
    }
  }
  const main = await connect()
  return new ClientTransport({
    run: main.run,
    duplicate: connect,
    isReplyError: err => err instanceof ErrorReply,
    close: main.close,
    commandTimeoutMs: options.commandTimeoutMs ?? 10000,
    retryForMs: Math.max(options.connectTimeoutMs ?? 5000, options.commandTimeoutMs ?? 10000)
  })
}

module.exports = { nodeRedisTransport }
