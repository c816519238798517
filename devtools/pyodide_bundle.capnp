@0xefc3ee6b5224b555;
# The subset of workerd's Pyodide bundle schema that the development bundle uses.
# Field ordinals must match workerd's `Bundle`/`Module`; names are ours.

struct Bundle {
  modules @0 :List(Module);
}

struct Module {
  name @0 :Text;
  union {
    src @1 :Data;
    wasm @4 :Data;
    data @5 :Data;
    json @6 :Text;
  }
  type @2 :ModuleType;
  tsDeclaration @3 :Text;
  compileCache @7 :Data;
}

enum ModuleType {
  bundle @0;
  builtin @1;
  internal @2;
}
