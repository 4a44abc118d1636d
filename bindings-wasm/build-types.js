'use strict'
// pkg/index.d.ts: the native addon's declarations (same API), plus what only this build has:
// a Queue constructor over a transport, the Transport interface and the two adapters.
const fs = require('node:fs')
const [source, target] = process.argv.slice(2)
let dts = fs.readFileSync(source, 'utf8')
const classStart = 'export declare class Queue {\n'
if (!dts.includes(classStart)) throw new Error(`no Queue class in ${source}`)
dts = dts.replace(classStart, `${classStart}  /** A queue over a transport; \`Queue.connect\` builds one over node-redis. */
  constructor(transport: Transport, name: string, options?: QueueOptions)
  /** The transport this queue runs on. */
  get transport(): Transport
`)
dts += `
/** A reply of a script call: what the Redis client returns. */
export type Reply = null | number | string | Uint8Array | Reply[]

/** The Redis function that runs an operation, and the library that defines it. */
export interface ScriptFunction {
  name: string
  library: string
}

/**
 * What a queue needs from a Redis client. Reject with an Error whose \`kind\` is 'server'
 * (Redis answered with an error), 'timeout' or 'unavailable'.
 */
export interface Transport {
  /**
   * With \`fn\`: FCALL \`fn.name\` with keys and args (on "ERR Function not found", FUNCTION LOAD
   * REPLACE \`fn.library\` first). Without it, or where Redis or the ACL refuses functions:
   * EVALSHA \`sha\` with keys and args; on a NOSCRIPT error, EVAL \`source\` instead. The
   * known-seen cache keeps links only under functions.
   */
  evalScript(sha: string, source: string, keys: string[], args: string[], fn?: ScriptFunction): Promise<Reply>
  /** BLPOP \`key\` for up to \`timeoutSeconds\` on a connection of its own; true if woken. */
  blockingWait(key: string, timeoutSeconds: number): Promise<boolean>
  /** Optional: resolves once the client has sent what it was handed (a seed calls it after each chunk, so Redis runs one while the next is normalized). */
  yieldNow?(): Promise<void>
  close?(): Promise<void>
}

/** Connect with the npm \`redis\` client (node-redis). */
export declare function nodeRedisTransport(url: string, options?: QueueOptions): Promise<Transport>
/** Connect with the npm \`ioredis\` client. */
export declare function ioredisTransport(url: string, options?: QueueOptions): Promise<Transport>
`
fs.writeFileSync(target, dts)
