// Import time of the Worker's own modules (src/sse, src/chat, src/entry.py) inside Pyodide
// 314 (the same Pyodide as the local runtime's bundle), in Node. workerd freezes clocks
// while code runs, so it cannot time an import itself. `js`/`pyodide` are Pyodide's own;
// the runtime's `workers` module is stubbed with the two names entry.py takes from it.
// Each repeat purges the modules and imports again from source (no bytecode cache).
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { loadPyodide } from "pyodide";

const root = new URL("..", import.meta.url).pathname;
const repeats = Number(process.argv[2] ?? "20");
const pyodide = await loadPyodide();

function copyTree(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (name === "__pycache__") continue;
    const target = "/app/" + relative(join(root, "src"), path);
    if (statSync(path).isDirectory()) {
      pyodide.FS.mkdirTree(target);
      copyTree(path);
    } else if (name.endsWith(".py")) {
      pyodide.FS.writeFile(target, readFileSync(path));
    }
  }
}
pyodide.FS.mkdirTree("/app");
copyTree(join(root, "src"));
pyodide.FS.writeFile("/app/workers.py", "class WorkerEntrypoint:\n    pass\n\nclass Response:\n    pass\n");

const result = pyodide.runPython(`
import json, sys, time
sys.path.insert(0, "/app")
sys.dont_write_bytecode = True

def purge():
    for name in [n for n in sys.modules if n in ("entry", "sse", "chat", "workers") or n.startswith(("sse.", "chat."))]:
        del sys.modules[name]

def timed(module):
    purge()
    began = time.perf_counter()
    __import__(module)
    return (time.perf_counter() - began) * 1000

import asyncio, hmac, uuid, codecs, random, re, urllib.parse  # stdlib the runtime loads anyway

def summary(values):
    values = sorted(values)
    return {"median": values[len(values) // 2], "min": values[0], "max": values[-1]}

timed("entry")  # warm-up
results = {"repeats": ${repeats}, "python": sys.version.split()[0]}
results["sse_ms"] = summary([timed("sse") for _ in range(${repeats})])
results["entry_ms"] = summary([timed("entry") for _ in range(${repeats})])
# The same with bytecode cached: what is left once compiling the source is paid for.
sys.dont_write_bytecode = False
timed("entry")
results["sse_cached_ms"] = summary([timed("sse") for _ in range(${repeats})])
results["entry_cached_ms"] = summary([timed("entry") for _ in range(${repeats})])
json.dumps(results)
`);
console.log(result);
