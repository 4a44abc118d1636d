// crawlq-wasm, ES-module entry: the wasm-bindgen `web` build, initialised from the .wasm file
// next to it, with the same API as the CommonJS entry. (Other runtimes: import
// ./web/crawlq_wasm.js, call its default init with the .wasm, and build a Queue over your
// own transport.)
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import * as wasm from './web/crawlq_wasm.js'

wasm.initSync({ module: readFileSync(new URL('./web/crawlq_wasm_bg.wasm', import.meta.url)) })

const require = createRequire(import.meta.url)
const { installProtocols } = require('./protocol.js')
const { installConnect } = require('./connect.js')
const { nodeRedisTransport } = require('./adapters/node-redis.js')
const { ioredisTransport } = require('./adapters/ioredis.js')

installConnect(wasm.Queue, wasm.validateOptions, wasm)
installProtocols(wasm.Queue, wasm.Work)

export const Queue = wasm.Queue
export const Work = wasm.Work
export const normalize = wasm.normalize
export const shardOf = wasm.shardOf
export const requestOf = wasm.requestOf
export const requestPayload = wasm.requestPayload
export const requestUpdate = wasm.requestUpdate
export const defaultOptions = wasm.defaultOptions
export const frameworkOptions = wasm.frameworkOptions
export const redactedUrl = wasm.redactedUrl
export { nodeRedisTransport, ioredisTransport }
