// The stand-in for Workers' Rate Limiting binding (RATE_LIMITER) in the production-like
// runtime (devtools/workerd_direct.py), where no miniflare provides one. Like the real
// binding it is a wrapped binding: a plain object in the Worker's isolate whose `limit()`
// makes one call to a separate counting service (counter.js, over RPC) and resolves to
// `{success}`. A service binding would not do: the Python SDK wraps service bindings and
// turns their results into dicts, which the real binding's result is not.
class RateLimit {
  #counter;

  constructor(counter) {
    this.#counter = counter;
  }

  async limit(options) {
    const key = options?.key ?? "";
    if (typeof key !== "string") throw new TypeError(`invalid key: ${key}`);
    return { success: await this.#counter.limit(key) };
  }
}

export default function makeBinding(env) {
  return new RateLimit(env.counter);
}
