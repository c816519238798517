// Import time of the Worker's own modules (src/sse, src/chat, src/entry.py) inside Pyodide
// 314 (the same Pyodide as the local runtime's bundle), in Node. workerd freezes clocks
// while code runs, so it cannot time an import itself. `js`/`pyodide` are Pyodide's own;
// the runtime's `workers` module is stubbed with the names the Worker takes from it.
//   cold:   a fresh interpreter per repeat, first `import entry` (with every stdlib
//           module the Worker pulls in beyond Pyodide's own start-up)
//   warm:   in one interpreter, our modules purged and imported again from source
//   cached: the same with bytecode cached, i.e. executing module bodies only
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { loadPyodide } from "pyodide";

const root = new URL("..", import.meta.url).pathname;
const repeats = Number(process.argv[2] ?? "20");
// One repeat is the suite's check that the Worker imports (tests/devtools/test_bench_import_time.py):
// one interpreter, the slow part (loading Pyodide takes seconds), not three.
const coldRepeats = repeats === 1 ? 1 : Math.max(3, Math.floor(repeats / 4));

async function interpreter() {
  const pyodide = await loadPyodide();
  const copyTree = (dir) => {
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
  };
  pyodide.FS.mkdirTree("/app");
  copyTree(join(root, "src"));
  pyodide.FS.writeFile(
    "/app/workers.py",
    "class WorkerEntrypoint:\n    pass\n\nclass DurableObject:\n    pass\n\nclass Response:\n    pass\n",
  );
  pyodide.runPython(`import sys; sys.path.insert(0, "/app"); sys.dont_write_bytecode = True`);
  return pyodide;
}

const cold = [];
let pyodide;
for (let i = 0; i < coldRepeats; i++) {
  pyodide = await interpreter();
  cold.push(pyodide.runPython(`
import time
began = time.perf_counter()
import entry
(time.perf_counter() - began) * 1000`));
}

// The warm and cached figures in the last cold interpreter: they purge our modules first,
// and its stdlib modules are loaded as a warm-up would load them.
const result = JSON.parse(pyodide.runPython(`
import json, sys, time

def purge():
    for name in [n for n in sys.modules if n in ("entry", "sse", "chat") or n.startswith(("sse.", "chat."))]:
        del sys.modules[name]

def timed(module):
    purge()
    began = time.perf_counter()
    __import__(module)
    return (time.perf_counter() - began) * 1000

def summary(values):
    values = sorted(values)
    return {"median": values[len(values) // 2], "min": values[0], "max": values[-1]}

timed("entry")  # warm-up: loads the stdlib modules the Worker uses
results = {"repeats": ${repeats}, "python": sys.version.split()[0]}
results["sse_ms"] = summary([timed("sse") for _ in range(${repeats})])
results["entry_ms"] = summary([timed("entry") for _ in range(${repeats})])
sys.dont_write_bytecode = False
timed("entry")
results["sse_cached_ms"] = summary([timed("sse") for _ in range(${repeats})])
results["entry_cached_ms"] = summary([timed("entry") for _ in range(${repeats})])
json.dumps(results)`));
cold.sort((a, b) => a - b);
result.entry_cold_ms = { median: cold[Math.floor(cold.length / 2)], min: cold[0], max: cold[cold.length - 1], runs: cold.length };
console.log(JSON.stringify(result));
