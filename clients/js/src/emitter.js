// emitter.js — a small event emitter that works the same in Node and browsers.
// A listener that throws is reported on the 'listenerError' event (or the
// console), never into the client's own receive path.
export class Emitter {
  #listeners = new Map();

  on(name, fn) {
    let set = this.#listeners.get(name);
    if (!set) this.#listeners.set(name, (set = new Set()));
    set.add(fn);
    return this;
  }

  off(name, fn) {
    this.#listeners.get(name)?.delete(fn);
    return this;
  }

  once(name, fn) {
    const wrap = (...args) => { this.off(name, wrap); fn(...args); };
    return this.on(name, wrap);
  }

  listenerCount(name) { return this.#listeners.get(name)?.size ?? 0; }

  emit(name, ...args) {
    const set = this.#listeners.get(name);
    if (!set) return false;
    for (const fn of [...set]) {
      try {
        fn(...args);
      } catch (e) {
        if (name !== 'listenerError' && this.listenerCount('listenerError')) this.emit('listenerError', e, name);
        else console.error(`crowd-client: a '${name}' listener threw:`, e);
      }
    }
    return true;
  }
}
