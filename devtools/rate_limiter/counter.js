// The counting service behind the stand-in for Workers' Rate Limiting binding in the
// production-like runtime (devtools/workerd_direct.py; binding.js is the binding the
// Worker sees). It follows the binding's `simple` settings, in windows aligned to the clock
// as miniflare counts: at most LIMIT requests per key per PERIOD seconds.
import { WorkerEntrypoint } from "cloudflare:workers";

// key -> requests counted in the current window; one isolate serves the whole runtime.
let counts = new Map();
let currentWindow = -1;

export default class RateLimitCounter extends WorkerEntrypoint {
  async limit(key) {
    const limit = Number(this.env.LIMIT);
    const window = Math.floor(Date.now() / (Number(this.env.PERIOD) * 1000));
    if (window !== currentWindow) {
      counts = new Map(); // a past window's counts never matter again
      currentWindow = window;
    }
    const count = counts.get(key) ?? 0;
    if (count >= limit) return false;
    counts.set(key, count + 1);
    return true;
  }
}
