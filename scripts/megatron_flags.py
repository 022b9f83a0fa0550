#!/usr/bin/env python3
"""Lists every command-line flag Megatron-LM's pretrain_gpt.py accepts, as C++.

Megatron-LM builds the parser of pretrain_gpt.py in
megatron/training/arguments.py: add_megatron_arguments() calls _add_*_args()
functions that hold literal group.add_argument('--flag', ...) calls, and some
of them turn config dataclasses (TransformerConfig, TrainingConfig, ...) into
flags with ArgumentGroupFactory (megatron/training/argument_utils.py).
pretrain_gpt.py then adds its extra_args_provider (ModelOpt's
add_modelopt_args, when nvidia-modelopt is installed). This script reads that
source out of a Megatron-LM git directory at one commit and follows the same
steps statically, with Python's ast module: it never imports Megatron (which
needs torch), so it runs with the standard library alone.

For each flag it records how many values it takes (the MegatronArity of
src/config/internal/megatron_flags.hpp):
  None      action store_true / store_false / store_const / count / help /
            BooleanOptionalAction (which also adds --no-<flag>), or a bool
            dataclass field
  One       one value: add_argument without nargs or action, nargs=1,
            a scalar, Optional[X], Literal[...] or Enum dataclass field
  Many      nargs '+', '*', '...' or an integer > 1; a list[X] field
  Optional  nargs '?'
ArgumentGroupFactory is mirrored as written: a field named foo_bar becomes
--foo-bar; a bool field whose default == False becomes store_true, any other
bool field (default True, or None for Optional[bool]) store_false named
--no-foo-bar and --disable-foo-bar; a field's metadata["argparse_meta"]
(arg_names, nargs, action) wins; fields with init=False or in the factory's
exclude list are skipped; fields inherited from dataclass bases come first.

Flags added only when an optional package is present (Kitchen, ModelOpt)
are included: the parser accepts them wherever that package is installed,
and a note on stderr names each such group. argparse's own -h/--help are
included too. Anything the script cannot interpret (an add_argument call
with computed names, an annotation it cannot read, a duplicate flag, an
add_argument call it never reaches) is reported on stderr as a warning,
never dropped silently.

usage:
  python3 scripts/megatron_flags.py /path/to/Megatron-LM.git --commit d98e8a6 \\
      --out src/config/megatron_flag_table.cpp
  MEGATRON_DIR  a Megatron-LM git directory (bare mirror or clone); files are
                read with `git show COMMIT:path`, so no work tree is needed
  --commit      the commit to read (default HEAD)
  --out         where to write the C++ file (default: stdout)
  --list        print "flag arity source" lines instead of C++
"""
import argparse
import ast
import builtins
import subprocess
import sys

ARGUMENTS_PY = "megatron/training/arguments.py"
PRETRAIN_GPT_PY = "pretrain_gpt.py"
INITIALIZE_PY = "megatron/training/initialize.py"
FACTORY_NAME = "ArgumentGroupFactory"

NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "count", "help", "version",
                    "append_const"}
VALUE_ACTIONS = {None, "store", "append", "extend"}
NARGS_NAMES = {"OPTIONAL": "?", "ZERO_OR_MORE": "*", "ONE_OR_MORE": "+", "REMAINDER": "...",
               "PARSER": "A..."}
TYPING_GENERICS = {"Optional", "Union", "List", "Literal", "Tuple", "Dict", "Callable",
                   "ContextManager", "Sequence", "Iterable", "Mapping", "Set", "FrozenSet",
                   "Type", "Any", "ClassVar", "Final", "Annotated"}
ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"}

_warnings = []


def warn(msg):
    _warnings.append(msg)
    print(f"warning: {msg}", file=sys.stderr)


def note(msg):
    print(f"note: {msg}", file=sys.stderr)


# --------------------------------------------------------------------------- source access

class Repo:
    """Python modules of one Megatron-LM commit, read with git, parsed on demand."""

    def __init__(self, git_dir, commit):
        self.git_dir = git_dir
        out = self._git("log", "-1", "--format=%H %cs", commit).split()
        self.commit, self.date = out[0], out[1]
        self.files = set(self._git("ls-tree", "-r", "--name-only", self.commit).splitlines())
        self._modules = {}

    def _git(self, *args):
        run = subprocess.run(["git", "-C", self.git_dir, *args], capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"git {' '.join(args)} in {self.git_dir} failed: {run.stderr.strip()}")
        return run.stdout

    def module_path(self, modname):
        base = modname.replace(".", "/")
        for path in (base + ".py", base + "/__init__.py"):
            if path in self.files:
                return path
        return None

    def module(self, modname=None, path=None):
        path = path or self.module_path(modname)
        if path is None or path not in self.files:
            return None
        if path not in self._modules:
            if modname is None:
                modname = path[:-3].replace("/", ".")
                if modname.endswith(".__init__"):
                    modname = modname[: -len(".__init__")]
            text = self._git("show", f"{self.commit}:{path}")
            self._modules[path] = Module(self, modname, path, ast.parse(text, filename=path))
        return self._modules[path]


class Module:
    def __init__(self, repo, name, path, tree):
        self.repo, self.name, self.path, self.tree = repo, name, path, tree
        self.is_package = path.endswith("__init__.py")
        self.defs = {}  # name -> AST node (ClassDef, FunctionDef, Import alias info, expr)
        self._collect(tree.body)

    def _collect(self, body):
        for stmt in body:
            if isinstance(stmt, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defs.setdefault(stmt.name, ("def", stmt))
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                self.defs.setdefault(stmt.targets[0].id, ("expr", stmt.value))
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                self.defs.setdefault(stmt.target.id, ("expr", stmt.value))
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for name, binding in import_bindings(self, stmt):
                    self.defs.setdefault(name, binding)
            elif isinstance(stmt, ast.If):
                self._collect(stmt.body)
                self._collect(stmt.orelse)
            elif isinstance(stmt, ast.Try):
                self._collect(stmt.body)
                for h in stmt.handlers:
                    self._collect(h.body)
                self._collect(stmt.orelse)

    def absolute(self, level, modname):
        if level == 0:
            return modname
        parts = self.name.split(".")
        if not self.is_package:
            parts = parts[:-1]
        parts = parts[: len(parts) - (level - 1)] if level > 1 else parts
        return ".".join(parts + ([modname] if modname else []))


def import_bindings(module, stmt):
    """(local name, ("import", module name, attribute or None)) for an import statement."""
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if a.asname:
                yield a.asname, ("import", a.name, None)
            else:
                top = a.name.split(".")[0]
                yield top, ("import", top, None)
    else:
        src = module.absolute(stmt.level, stmt.module)
        for a in stmt.names:
            yield a.asname or a.name, ("import", src, a.name)


class Ref:
    """What a name resolves to: a definition in the repo, a repo module, or something outside."""

    def __init__(self, kind, module=None, node=None, qualname=None):
        self.kind, self.module, self.node, self.qualname = kind, module, node, qualname

    def __repr__(self):
        return f"Ref({self.kind}, {self.qualname})"


def resolve_binding(repo, module, binding, depth=0):
    kind = binding[0]
    if kind == "def":
        node = binding[1]
        return Ref("class" if isinstance(node, ast.ClassDef) else "func", module, node,
                   f"{module.name}.{node.name}")
    if kind == "expr":
        return Ref("expr", module, binding[1])
    _, modname, attr = binding
    if attr is None:
        target = repo.module(modname)
        return Ref("module", target, qualname=modname) if target else Ref("external", qualname=modname)
    target = repo.module(modname)
    if target is None:
        return Ref("external", qualname=f"{modname}.{attr}")
    found = resolve_name(repo, target, attr, depth + 1)
    if found is not None:
        return found
    sub = repo.module(f"{modname}.{attr}")
    if sub is not None:
        return Ref("module", sub, qualname=f"{modname}.{attr}")
    return Ref("missing", qualname=f"{modname}.{attr}")


def resolve_name(repo, module, name, depth=0, local_scope=None):
    if depth > 20:
        return None
    if local_scope and name in local_scope:
        return resolve_binding(repo, module, local_scope[name], depth)
    if name in module.defs:
        return resolve_binding(repo, module, module.defs[name], depth)
    return None


def resolve_expr(repo, module, node, local_scope=None):
    """Resolve a Name or dotted Attribute to a Ref (or None when unknown)."""
    if isinstance(node, ast.Name):
        ref = resolve_name(repo, module, node.id, local_scope=local_scope)
        if ref is None and hasattr(builtins, node.id):
            return Ref("builtin", qualname=node.id)
        return ref
    if isinstance(node, ast.Attribute):
        base = resolve_expr(repo, module, node.value, local_scope)
        if base is None:
            return None
        if base.kind == "module":
            ref = resolve_name(repo, base.module, node.attr)
            if ref is None:
                sub = repo.module(f"{base.module.name}.{node.attr}")
                return Ref("module", sub, qualname=sub.name) if sub else Ref("missing", qualname=f"{base.qualname}.{node.attr}")
            return ref
        if base.kind == "external":
            return Ref("external", qualname=f"{base.qualname}.{node.attr}")
        return Ref("attribute", qualname=f"{base.qualname}.{node.attr}")
    return None


def const_value(node):
    """A literal value, or raise ValueError."""
    return ast.literal_eval(node)


# --------------------------------------------------------------------------- arity

def arity_of(action, nargs, where):
    """MegatronArity name for argparse's action and nargs (both already literal or None)."""
    if action in NO_VALUE_ACTIONS or action == "BooleanOptionalAction":
        return "None"
    if action not in VALUE_ACTIONS:
        warn(f"{where}: unknown action {action!r}; assuming it takes one value")
        return "One"
    if nargs is None:
        return "One"
    if nargs == "?":
        return "Optional"
    if nargs in ("*", "+", "...", "A..."):
        return "Many"
    if isinstance(nargs, int) and not isinstance(nargs, bool):
        if nargs == 1:
            return "One"
        if nargs > 1:
            return "Many"
        warn(f"{where}: nargs={nargs} takes no value with action {action!r}; recording None")
        return "None"
    warn(f"{where}: cannot interpret nargs={nargs!r}; assuming one value")
    return "One"


def interpret_action(node, where):
    if node is None:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr == "BooleanOptionalAction":
        return "BooleanOptionalAction"
    if isinstance(node, ast.Name) and node.id == "BooleanOptionalAction":
        return "BooleanOptionalAction"
    warn(f"{where}: cannot interpret action={ast.unparse(node)}")
    return ast.unparse(node)


def interpret_nargs(node, where):
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Attribute) and node.attr in NARGS_NAMES:
        return NARGS_NAMES[node.attr]
    warn(f"{where}: cannot interpret nargs={ast.unparse(node)}")
    return ast.unparse(node)


def expand_names(names, action):
    """The option strings argparse registers: BooleanOptionalAction adds --no-X for each --X."""
    out = list(names)
    if action == "BooleanOptionalAction":
        out += ["--no-" + n[2:] for n in names if n.startswith("--")]
    return out


# --------------------------------------------------------------------------- dataclass fields

class TypeInferenceError(Exception):
    pass


class T:
    """A type annotation, evaluated symbolically the way typing would."""

    def __init__(self, kind, name=None, args=()):
        self.kind, self.name, self.args = kind, name, tuple(args)  # kind: prim enum none union list literal generic

    def __eq__(self, other):
        return isinstance(other, T) and (self.kind, self.name, self.args) == (other.kind, other.name, other.args)

    def __hash__(self):
        return hash((self.kind, self.name, self.args))

    def __repr__(self):
        return f"{self.kind}:{self.name}{list(self.args) if self.args else ''}"


def make_union(members):
    flat = []
    for m in members:
        for x in (m.args if m.kind == "union" else (m,)):
            if x not in flat:
                flat.append(x)
    return flat[0] if len(flat) == 1 else T("union", args=flat)


class TypeEvaluator:
    def __init__(self, repo):
        self.repo = repo

    def is_enum_class(self, module, cls, depth=0):
        for b in cls.bases:
            if isinstance(b, (ast.Name, ast.Attribute)):
                last = b.id if isinstance(b, ast.Name) else b.attr
                if last in ENUM_BASES:
                    return True
                ref = resolve_expr(self.repo, module, b)
                if ref and ref.kind == "class" and depth < 20 and self.is_enum_class(ref.module, ref.node, depth + 1):
                    return True
        return False

    def typing_name(self, module, node):
        """'Optional', 'List', ... when node names a typing construct, else None."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("typing", "t"):
            return node.attr
        if isinstance(node, ast.Name):
            b = module.defs.get(node.id)
            if b and b[0] == "import" and b[1] in ("typing", "typing_extensions") and b[2]:
                return b[2]
            if b is None and node.id in TYPING_GENERICS:
                return node.id
        return None

    def eval(self, module, node, depth=0):
        if depth > 30:
            raise TypeInferenceError("type alias too deep")
        if isinstance(node, ast.Constant):
            if node.value is None:
                return T("none")
            if isinstance(node.value, str):
                # a string annotation: dataclasses leave it a str; argparse would get a str as 'type'
                warn(f"{module.path}:{node.lineno}: string annotation {node.value!r} left unevaluated "
                     "(as Megatron would see it); argparse would reject it as a type")
                return T("prim", "<str annotation>")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return make_union([self.eval(module, node.left, depth + 1), self.eval(module, node.right, depth + 1)])
        if isinstance(node, ast.Subscript):
            base = self.typing_name(module, node.value)
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if base is None and isinstance(node.value, ast.Name) and node.value.id in ("list", "dict", "tuple", "set", "type"):
                base = {"list": "List", "dict": "Dict", "tuple": "Tuple", "set": "Set", "type": "Type"}[node.value.id]
            if base == "Optional":
                return make_union([self.eval(module, items[0], depth + 1), T("none")])
            if base == "Union":
                return make_union([self.eval(module, i, depth + 1) for i in items])
            if base == "List":
                return T("list", args=[self.eval(module, i, depth + 1) for i in items])
            if base == "Literal":
                try:
                    return T("literal", args=[const_value(i) for i in items])
                except ValueError:
                    raise TypeInferenceError(f"non-literal Literal[...] {ast.unparse(node)}")
            if base == "Annotated":
                return self.eval(module, items[0], depth + 1)
            if base is not None:
                return T("generic", base)
            ref = resolve_expr(self.repo, module, node.value)
            if ref is not None and ref.kind == "expr":
                raise TypeInferenceError(f"subscripted alias {ast.unparse(node)}")
            return T("generic", ast.unparse(node.value))
        if isinstance(node, (ast.Name, ast.Attribute)):
            tname = self.typing_name(module, node)
            if tname in ("List",):
                return T("generic", "List")  # bare typing.List: get_args() is empty -> unsupported
            if tname in ("Callable", "ContextManager", "Sequence", "Any", "Dict", "Tuple"):
                return T("generic", tname) if tname != "Any" else T("prim", "Any")
            if isinstance(node, ast.Name) and node.id in ("bool", "int", "float", "str", "list", "dict", "tuple", "bytes", "object") \
                    and node.id not in module.defs:
                return T("prim", node.id)
            ref = resolve_expr(self.repo, module, node)
            if ref is None or ref.kind in ("external", "attribute", "builtin", "module"):
                return T("prim", ast.unparse(node))  # e.g. torch.dtype, signal.Signals: one value
            if ref.kind == "class":
                if self.is_enum_class(ref.module, ref.node):
                    return T("enum", ref.qualname)
                return T("prim", ref.qualname)
            if ref.kind == "expr":
                return self.eval(ref.module, ref.node, depth + 1)
            if ref.kind == "missing":
                warn(f"{module.path}:{node.lineno}: cannot find {ref.qualname}; treating it as a plain type")
                return T("prim", ref.qualname)
            return T("prim", ast.unparse(node))
        raise TypeInferenceError(f"cannot read annotation {ast.unparse(node)}")


def extract_type(t):
    """ArgumentGroupFactory._extract_type: {'type': ..., 'nargs': ...} or TypeInferenceError."""
    if t.kind == "enum":
        return {"type": "enum"}
    if t.kind in ("prim", "none"):
        return {"type": t.name if t.kind == "prim" else "NoneType"}
    if t.kind == "union":
        if t.args[1].kind == "none":
            return extract_type(t.args[0])
        raise TypeInferenceError(f"Unions not supported by argparse: {t}")
    if t.kind == "list":
        if len(t.args) == 1:
            kw = extract_type(t.args[0])
            kw["nargs"] = "+"
            return kw
        raise TypeInferenceError(f"Multi-type lists not supported by argparse: {t}")
    if t.kind == "literal":
        kinds = {type(v) for v in t.args}
        if len(kinds) != 1:
            raise TypeInferenceError(f"mixed Literal {t}")
        return {"type": type(t.args[0]).__name__}
    raise TypeInferenceError(f"Unsupported type: {t}")


class Field:
    def __init__(self, name, module, annotation, value, lineno, owner):
        self.name, self.module, self.annotation, self.lineno, self.owner = name, module, annotation, lineno, owner
        self.init = True
        self.default = ("missing",)  # ("const", v) | ("missing",) | ("expr", node)
        self.has_factory = False
        self.meta = None  # dict of key -> AST node, or None
        self.meta_node = None
        if value is None:
            return
        if is_field_call(value):
            kws = {k.arg: k.value for k in value.keywords}
            if "init" in kws:
                try:
                    self.init = bool(const_value(kws["init"]))
                except ValueError:
                    warn(f"{self.where}: cannot interpret init={ast.unparse(kws['init'])}; assuming True")
            if "default" in kws:
                self.default = const_or_expr(kws["default"])
            if "default_factory" in kws:
                self.has_factory = True
            if "metadata" in kws:
                self.meta_node = kws["metadata"]
                self.meta = read_argparse_meta(kws["metadata"], self.where)
            if None in kws:
                warn(f"{self.where}: field(**...) not interpreted")
        else:
            self.default = const_or_expr(value)

    @property
    def where(self):
        return f"{self.module.path}:{self.lineno} {self.owner}.{self.name}"


def const_or_expr(node):
    try:
        return ("const", const_value(node))
    except ValueError:
        return ("expr", node)


def is_field_call(node):
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == "field")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "field"))


def read_argparse_meta(node, where):
    if not isinstance(node, ast.Dict):
        warn(f"{where}: metadata is not a dict literal ({ast.unparse(node)}); argparse_meta not read")
        return None
    for k, v in zip(node.keys, node.values):
        if k is None:
            warn(f"{where}: metadata uses ** expansion; not interpreted")
        elif isinstance(k, ast.Constant) and k.value == "argparse_meta":
            if not isinstance(v, ast.Dict):
                warn(f"{where}: argparse_meta is not a dict literal; not interpreted")
                return None
            meta = {}
            for mk, mv in zip(v.keys, v.values):
                if not (isinstance(mk, ast.Constant) and isinstance(mk.value, str)):
                    warn(f"{where}: argparse_meta key {ast.unparse(mk) if mk else '**'} not interpreted")
                    continue
                meta[mk.value] = mv
            return meta
    return None


def is_dataclass_def(cls):
    for d in cls.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", None)
        if name == "dataclass":
            return True
    return False


def annotation_skipped(ann):
    text = ast.unparse(ann)
    return any(s in text for s in ("ClassVar", "InitVar", "KW_ONLY"))


class DataclassReader:
    def __init__(self, repo):
        self.repo = repo
        self.types = TypeEvaluator(repo)

    def fields(self, module, cls, depth=0):
        """dataclasses.fields() order: bases' fields first (a redefinition keeps its place)."""
        out = {}
        for b in reversed(cls.bases):
            ref = resolve_expr(self.repo, module, b)
            if ref is None or ref.kind != "class":
                if not (isinstance(b, ast.Name) and b.id in ("object", "Protocol", "Generic")):
                    note(f"{module.path}:{cls.lineno} {cls.name}: base {ast.unparse(b)} is outside the repo; "
                         "assuming it adds no dataclass fields")
                continue
            for name, f in self.fields(ref.module, ref.node, depth + 1).items():
                out[name] = f
        if not is_dataclass_def(cls):
            return out
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign):
                if not isinstance(stmt.target, ast.Name):
                    warn(f"{module.path}:{stmt.lineno}: annotated non-name in {cls.name}; skipped")
                    continue
                if annotation_skipped(stmt.annotation):
                    continue
                out[stmt.target.id] = Field(stmt.target.id, module, stmt.annotation, stmt.value,
                                            stmt.lineno, cls.name)
            elif isinstance(stmt, (ast.If, ast.Try, ast.With, ast.For)):
                for sub in ast.walk(stmt):
                    if isinstance(sub, ast.AnnAssign):
                        warn(f"{module.path}:{sub.lineno}: field annotated inside a block in {cls.name}; "
                             "not interpreted")
        return out

    def flags(self, module, cls, exclude, where):
        """(names, arity, where) for each flag ArgumentGroupFactory(cls, exclude).build_group() adds."""
        out = []
        fields = self.fields(module, cls)
        for name in exclude:
            if name not in fields:
                note(f"{where}: exclude entry {name!r} is not a field of {cls.name}")
        for name, f in fields.items():
            if name in exclude or not f.init:
                continue
            fwhere = f.where
            names = ["--" + name.replace("_", "-")]
            action, nargs = None, None
            try:
                kw = extract_type(self.types.eval(f.module, f.annotation))
                nargs = kw.get("nargs")
                if kw["type"] == "bool":
                    # attribute.default == False  (MISSING when a default_factory is used)
                    is_false = f.default[0] == "const" and f.default[1] == False  # noqa: E712
                    if f.default[0] == "expr":
                        warn(f"{fwhere}: bool default {ast.unparse(f.default[1])} not a literal; "
                             "assuming it is not False (store_false)")
                    action = "store_true" if is_false else "store_false"
                    if action == "store_false":
                        names = ["--no-" + name.replace("_", "-"), "--disable-" + name.replace("_", "-")]
            except TypeInferenceError as e:
                if f.meta is None:
                    warn(f"{fwhere}: {e} and no argparse_meta: Megatron's ArgumentGroupFactory would "
                         "raise here; flag recorded with one value")
            if f.default == ("missing",) and not f.has_factory:
                warn(f"{fwhere}: field has no default; ArgumentGroupFactory would fail on it")
            if f.meta is not None:
                if "arg_names" in f.meta:
                    try:
                        names = list(const_value(f.meta["arg_names"]))
                    except ValueError:
                        warn(f"{fwhere}: argparse_meta arg_names not literal; kept {names}")
                if "nargs" in f.meta:
                    nargs = interpret_nargs(f.meta["nargs"], fwhere)
                if "action" in f.meta:
                    action = interpret_action(f.meta["action"], fwhere)
                for k in f.meta:
                    if k not in ("arg_names", "nargs", "action", "type", "default", "dest", "help",
                                 "choices", "metavar", "required", "const"):
                        note(f"{fwhere}: argparse_meta key {k!r} does not affect arity; ignored")
            if action in NO_VALUE_ACTIONS and nargs is not None:
                warn(f"{fwhere}: action {action} with nargs {nargs!r} (argparse would reject it)")
            names = expand_names(names, action)
            out.append((names, arity_of(action, nargs, fwhere), fwhere))
        return out


# --------------------------------------------------------------------------- parser walk

class ParserWalker:
    """Follows the functions that build the parser, in source order, collecting flags."""

    def __init__(self, repo):
        self.repo = repo
        self.dataclasses = DataclassReader(repo)
        self.flags = []  # (name, arity, where)
        self.reached_calls = set()  # (path, lineno, col) of add_argument calls handled
        self.stack = []
        self.conditional = {}  # condition -> flags added only under it

    def emit(self, names, arity, where, conditional):
        for n in names:
            self.flags.append((n, arity, where))
        if conditional:
            self.conditional.setdefault(conditional, []).extend(names)

    # -- functions

    def walk_function(self, module, func, conditional=None):
        key = (module.path, func.name)
        if key in self.stack:
            return
        self.stack.append(key)
        scope = {}
        self._walk_body(module, func, func.body, scope, conditional)
        for name, (val, _) in list(scope.items()):
            if isinstance(val, tuple) and val[0] == "factory" and not val[3]:
                warn(f"{module.path}:{val[2]}: {FACTORY_NAME} {name} never builds its group; no flags taken")
        self.stack.pop()

    def _walk_body(self, module, func, body, scope, conditional):
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for name, binding in import_bindings(module, stmt):
                    scope[name] = (binding, None)
                continue
            if isinstance(stmt, ast.If):
                cond = conditional or f"if {ast.unparse(stmt.test)}"
                self._visit_expr(module, func, stmt.test, scope, conditional)
                self._walk_body(module, func, stmt.body, scope, cond)
                self._walk_body(module, func, stmt.orelse, scope, conditional or f"if not {ast.unparse(stmt.test)}")
                continue
            if isinstance(stmt, ast.Try):
                self._walk_body(module, func, stmt.body, scope, conditional)
                for h in stmt.handlers:
                    self._walk_body(module, func, h.body, scope, conditional or "except handler")
                self._walk_body(module, func, stmt.orelse, scope, conditional)
                self._walk_body(module, func, stmt.finalbody, scope, conditional)
                continue
            if isinstance(stmt, (ast.For, ast.While)):
                self._visit_expr(module, func, stmt, scope, conditional or "loop")
                continue
            if isinstance(stmt, ast.With):
                self._walk_body(module, func, stmt.body, scope, conditional)
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if any(is_add_argument(n) for n in ast.walk(stmt)):
                    warn(f"{module.path}:{stmt.lineno}: nested definition {stmt.name} holds add_argument calls; "
                         "not followed")
                continue
            self._visit_expr(module, func, stmt, scope, conditional)
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                tgt = stmt.targets[0].id
                val = stmt.value
                if is_factory_call(val):
                    scope[tgt] = (("factory", val, stmt.lineno, False), None)
                else:
                    scope[tgt] = (("expr", val), None)

    def _local_binding(self, scope, name):
        v = scope.get(name)
        return v[0] if v else None

    def _visit_expr(self, module, func, node, scope, conditional):
        """Handle calls in node, outermost first, in source order."""
        if isinstance(node, ast.Call):
            if is_add_argument(node):
                self._add_argument(module, node, conditional)
                for a in node.args + [k.value for k in node.keywords]:
                    self._visit_expr(module, func, a, scope, conditional)
                return
            if isinstance(node.func, ast.Attribute) and node.func.attr == "build_group":
                self._build_group(module, node, scope, conditional)
                return
            if isinstance(node.func, ast.Name):
                self._maybe_follow(module, node, scope, conditional)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            self._visit_expr(module, func, child, scope, conditional)

    def _maybe_follow(self, module, call, scope, conditional):
        name = call.func.id
        b = self._local_binding(scope, name)
        ref = resolve_binding(self.repo, module, b) if (b and b[0] == "import") else \
            (None if b else resolve_name(self.repo, module, name))
        if ref is None or ref.kind != "func":
            return
        if any(is_add_argument(n) or is_build_group(n) for n in ast.walk(ref.node)):
            self.walk_function(ref.module, ref.node, conditional)

    def _add_argument(self, module, call, conditional):
        where = f"{module.path}:{call.lineno}"
        self.reached_calls.add((module.path, call.lineno, call.col_offset))
        names = []
        for a in call.args:
            if isinstance(a, ast.Constant) and isinstance(a.value, str):
                names.append(a.value)
            else:
                warn(f"{where}: add_argument name {ast.unparse(a)} is not a literal; skipped that name")
        kws = {k.arg: k.value for k in call.keywords}
        if None in kws:
            warn(f"{where}: add_argument(**{ast.unparse(kws[None])}) not interpreted")
        if not names:
            warn(f"{where}: add_argument call without literal flag names; nothing recorded")
            return
        positional = [n for n in names if not n.startswith("-")]
        if positional:
            warn(f"{where}: positional argument {positional} is not a flag; not recorded")
            names = [n for n in names if n.startswith("-")]
            if not names:
                return
        action = interpret_action(kws.get("action"), where)
        nargs = interpret_nargs(kws.get("nargs"), where)
        self.emit(expand_names(names, action), arity_of(action, nargs, where), where, conditional)

    def _build_group(self, module, call, scope, conditional):
        where = f"{module.path}:{call.lineno}"
        target = call.func.value
        factory = None
        if is_factory_call(target):
            factory = target
        elif isinstance(target, ast.Name):
            b = scope.get(target.id)
            if b and b[0][0] == "factory":
                factory = b[0][1]
                scope[target.id] = (("factory", b[0][1], b[0][2], True), None)
        if factory is None:
            warn(f"{where}: build_group on {ast.unparse(target)} not traced to {FACTORY_NAME}(...); no flags taken")
            return
        if not factory.args:
            warn(f"{where}: {FACTORY_NAME}() without a class; no flags taken")
            return
        cls_node = factory.args[0]
        exclude_node = next((k.value for k in factory.keywords if k.arg == "exclude"),
                            factory.args[1] if len(factory.args) > 1 else None)
        exclude = self._literal_list(module, exclude_node, scope, where) if exclude_node is not None else []
        ref = None
        if isinstance(cls_node, ast.Name):
            b = self._local_binding(scope, cls_node.id)
            if b and b[0] == "import":
                ref = resolve_binding(self.repo, module, b)
        if ref is None:
            ref = resolve_expr(self.repo, module, cls_node)
        if ref is None or ref.kind != "class":
            warn(f"{where}: cannot find dataclass {ast.unparse(cls_node)} ({ref}); no flags taken")
            return
        for names, arity, fwhere in self.dataclasses.flags(ref.module, ref.node, set(exclude),
                                                           f"{where} {ref.node.name}"):
            self.emit(names, arity, f"{fwhere} (via {where})", conditional)

    def _literal_list(self, module, node, scope, where):
        if isinstance(node, ast.Name):
            b = self._local_binding(scope, node.id)
            if b and b[0] == "expr":
                node = b[1]
            elif node.id in module.defs and module.defs[node.id][0] == "expr":
                node = module.defs[node.id][1]
        try:
            return list(const_value(node))
        except ValueError:
            warn(f"{where}: exclude list {ast.unparse(node)} is not a literal; nothing excluded")
            return []


def is_add_argument(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument"


def is_build_group(node):
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "build_group"


def is_factory_call(node):
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == FACTORY_NAME)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == FACTORY_NAME))


def find_function(module, name):
    b = module.defs.get(name)
    if b and b[0] == "def" and isinstance(b[1], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return b[1]
    return None


def extra_args_providers(module):
    """(expr, condition) for each extra_args_provider=... passed in module (pretrain_gpt.py)."""
    out = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Call):
            for k in node.keywords:
                if k.arg == "extra_args_provider":
                    out.append((k.value, node.lineno))
    return out


def provider_functions(node, cond=None):
    if isinstance(node, ast.Constant) and node.value is None:
        return []
    if isinstance(node, ast.IfExp):
        t = ast.unparse(node.test)
        return provider_functions(node.body, f"if {t}") + provider_functions(node.orelse, f"if not {t}")
    return [(node, cond)]


# --------------------------------------------------------------------------- main

def collect(repo):
    walker = ParserWalker(repo)
    args_mod = repo.module(path=ARGUMENTS_PY)
    if args_mod is None:
        sys.exit(f"{ARGUMENTS_PY} not found at {repo.commit}")

    # argparse.ArgumentParser(...) in parse_args: -h/--help unless add_help=False.
    parse_args = find_function(args_mod, "parse_args")
    add_help = True
    if parse_args is not None:
        for n in ast.walk(parse_args):
            if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("ArgumentParser"):
                for k in n.keywords:
                    if k.arg == "add_help":
                        add_help = bool(const_value(k.value))
                    if k.arg == "allow_abbrev" and const_value(k.value) is not False:
                        warn(f"{ARGUMENTS_PY}:{n.lineno}: allow_abbrev is not False: argparse also "
                             "accepts unambiguous prefixes of these flags")
        if not any(isinstance(n, ast.Call) and ast.unparse(n.func) == "add_megatron_arguments"
                   for n in ast.walk(parse_args)):
            warn(f"{ARGUMENTS_PY}: parse_args does not call add_megatron_arguments")
    else:
        warn(f"{ARGUMENTS_PY}: no parse_args function found")
    if add_help:
        walker.emit(["-h", "--help"], "None", "argparse add_help", None)

    top = find_function(args_mod, "add_megatron_arguments")
    if top is None:
        sys.exit(f"{ARGUMENTS_PY}: add_megatron_arguments not found")
    walker.walk_function(args_mod, top)

    gpt = repo.module(path=PRETRAIN_GPT_PY)
    if gpt is None:
        warn(f"{PRETRAIN_GPT_PY} not found; no extra_args_provider taken")
    else:
        for expr, lineno in extra_args_providers(gpt):
            for fnode, cond in provider_functions(expr):
                where = f"{PRETRAIN_GPT_PY}:{lineno}"
                ref = resolve_expr(repo, gpt, fnode)
                if ref is None or ref.kind != "func":
                    warn(f"{where}: extra_args_provider {ast.unparse(fnode)} not found in the repo ({ref})")
                    continue
                walker.walk_function(ref.module, ref.node, cond and f"pretrain_gpt.py {cond}")

    for cond, names in walker.conditional.items():
        note(f"{len(names)} flag(s) added only {cond} (included): {' '.join(names)}")

    # Every add_argument in the files that make up the parser must have been reached.
    for path in (ARGUMENTS_PY, PRETRAIN_GPT_PY, INITIALIZE_PY) + tuple(
            sorted({p for p, _, _ in walker.reached_calls} - {ARGUMENTS_PY, PRETRAIN_GPT_PY, INITIALIZE_PY})):
        mod = repo.module(path=path)
        if mod is None:
            continue
        for n in ast.walk(mod.tree):
            if is_add_argument(n) and (path, n.lineno, n.col_offset) not in walker.reached_calls:
                warn(f"{path}:{n.lineno}: add_argument({', '.join(ast.unparse(a) for a in n.args)}) "
                     "is not reached from pretrain_gpt.py's parser; not recorded")
    return walker.flags


def dedupe(flags):
    table, where = {}, {}
    for name, arity, src in flags:
        if name in table:
            same = "same" if table[name] == arity else f"different ({table[name]} vs {arity})"
            warn(f"{name} defined twice, {same} arity: kept {where[name]}, dropped {src}"
                 " (argparse itself would refuse the second with a conflict error)")
            continue
        table[name], where[name] = arity, src
    return sorted(table.items(), key=lambda kv: kv[0].encode()), where


def render_cpp(repo, table, command):
    lines = [
        f"// Generated by scripts/megatron_flags.py from NVIDIA/Megatron-LM at",
        f"// {repo.commit} ({repo.date}). Do not edit by hand; regenerate with",
        f"//   {command}",
        "// Every flag pretrain_gpt.py's argument parser accepts (arguments.py's",
        "// add_megatron_arguments, its ArgumentGroupFactory dataclass groups, and",
        "// pretrain_gpt.py's extra_args_provider; groups that need an optional",
        "// package, Kitchen and ModelOpt, included), with how many values each takes.",
        f"// {len(table)} flags, sorted by name in byte order.",
        '#include "internal/megatron_flags.hpp"',
        "",
        "#include <array>",
        "#include <cstddef>",
        "",
        "namespace ptsim::config::internal {",
        "",
        "namespace {",
        "",
        "using enum MegatronArity;",
        "",
        f"constexpr std::array<MegatronFlag, {len(table)}> kFlags{{{{",
    ]
    for name, arity in table:
        if any(c in name for c in '"\\') or not name.isascii():
            sys.exit(f"flag name {name!r} cannot be written as a plain C++ literal")
        lines.append(f'    {{"{name}", {arity}}},')
    lines += [
        "}};",
        "",
        "constexpr bool sorted_and_unique() {",
        "  for (std::size_t i = 1; i < kFlags.size(); ++i) {",
        "    if (!(kFlags[i - 1].name < kFlags[i].name)) return false;",
        "  }",
        "  return true;",
        "}",
        'static_assert(sorted_and_unique(), "kFlags must be sorted by name, each once");',
        "",
        "}  // namespace",
        "",
        "std::span<const MegatronFlag> megatron_flags() { return kFlags; }",
        "",
        f'std::string_view megatron_flags_commit() {{ return "{repo.commit} ({repo.date})"; }}',
        "",
        "}  // namespace ptsim::config::internal",
        "",
    ]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("megatron_dir", help="Megatron-LM git directory (bare or not)")
    ap.add_argument("--commit", default="HEAD", help="commit to read (default HEAD)")
    ap.add_argument("--out", help="write the C++ file here instead of stdout")
    ap.add_argument("--list", action="store_true", help='print "flag arity source" lines instead of C++')
    opts = ap.parse_args()

    repo = Repo(opts.megatron_dir, opts.commit)
    table, where = dedupe(collect(repo))
    if opts.list:
        text = "".join(f"{n} {a} {where[n]}\n" for n, a in table)
    else:
        # Fixed text, so that the output does not depend on how the script was invoked.
        command = (f"python3 scripts/megatron_flags.py /path/to/Megatron-LM.git --commit {repo.commit[:7]}"
                   " --out src/config/megatron_flag_table.cpp")
        text = render_cpp(repo, table, command)
    if opts.out:
        with open(opts.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print(f"{len(table)} flags from {repo.commit} ({repo.date}); {len(_warnings)} warning(s)", file=sys.stderr)


if __name__ == "__main__":
    main()
