// Runs bench/reframer_bench.py inside Pyodide (the npm package pinned in package.json),
// with src/sse copied into Pyodide's in-memory filesystem, and prints its result.
//
//   node bench/reframer_pyodide.mjs [--repeats N] [--json]
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadPyodide } from "pyodide";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pyodide = await loadPyodide();

pyodide.FS.mkdirTree("/bench/sse");
for (const name of readdirSync(join(root, "src", "sse"))) {
  if (name.endsWith(".py")) {
    pyodide.FS.writeFile(`/bench/sse/${name}`, readFileSync(join(root, "src", "sse", name)));
  }
}
pyodide.FS.writeFile("/bench/reframer_bench.py", readFileSync(join(root, "bench", "reframer_bench.py")));

pyodide.globals.set("argv", pyodide.toPy(process.argv.slice(2)));
await pyodide.runPythonAsync(`
import sys
sys.path.insert(0, "/bench")
import reframer_bench
reframer_bench.main(list(argv))
`);
console.log(`pyodide: ${pyodide.version}, node: ${process.version}`);
