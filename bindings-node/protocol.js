'use strict'
// The parts of the JavaScript protocols a Queue class cannot declare from Rust: a `Work`
// iterator is async-iterable, and `work({ signal })` stops (releasing what it holds) when the
// signal aborts. Shared by the native addon and the WebAssembly build.

function installProtocols (Queue, Work) {
  const work = Queue.prototype.work
  Queue.prototype.work = function (options) {
    const { signal, ...rest } = options ?? {}
    if (signal !== undefined && (typeof signal !== 'object' || typeof signal.addEventListener !== 'function')) {
      const err = new TypeError('options.signal must be an AbortSignal')
      err.code = 'ERR_INVALID_ARG_TYPE'
      throw err
    }
    const iterator = work.call(this, rest)
    if (signal) {
      const stop = () => { iterator.close().catch(() => {}) }
      if (signal.aborted) stop()
      else signal.addEventListener('abort', stop, { once: true })
    }
    return iterator
  }
  Work.prototype[Symbol.asyncIterator] = function () {
    return this
  }
}

module.exports = { installProtocols }
