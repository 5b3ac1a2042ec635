"""eddy_kernel_support - the Python half of eddy-kernel.

Embedded into the binary at build time (kernel_runner/CMakeLists.txt) and
loaded as the module `eddy_kernel_support` in notebook and serve modes. It
runs cells the way IPython does for notebooks (last expression displayed,
display(), _repr_*_ rich reprs, inline matplotlib figures, a few magics) and
hands every output to a sink: a list of nbformat outputs (notebook mode) or
`_eddy_kernel.send`, which frames Jupyter messages onto the socket (serve
mode). All socket and file work stays in C.
"""
import ast
import builtins
import io
import json
import linecache
import os
import sys
import traceback

import _eddy_kernel as _k

_SUPPORT_FILE = "<eddy_kernel_support>"
_INLINE_BACKEND = "eddy_kernel_inline"


class StdinNotImplementedError(NotImplementedError):
    """input() was called but this frontend cannot answer input requests."""


class CellTimeoutError(TimeoutError):
    """A cell ran past its --timeout (the name nbclient uses)."""


class UsageError(Exception):
    """A magic that eddy-kernel does not support (the name IPython uses)."""


# ---- output streams -------------------------------------------------------

class OutStream(io.TextIOBase):
    """sys.stdout / sys.stderr while a cell runs: text goes to the kernel's
    sink, flushed at every newline (so a cell that prints a line a second
    streams each line) and at the end of the cell."""

    def __init__(self, name, kernel):
        super().__init__()
        self._name = name
        self._kernel = kernel
        self._buf = []

    @property
    def name(self):
        return "<%s>" % self._name

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "strict"

    def writable(self):
        return True

    def isatty(self):
        return False

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        if s:
            self._buf.append(s)
            if "\n" in s:
                self.flush()
        return len(s)

    def flush(self):
        if self._buf:
            text = "".join(self._buf)
            self._buf.clear()
            # Lone surrogates cannot travel as JSON; replace them.
            text = text.encode("utf-8", "replace").decode("utf-8")
            self._kernel.emit("stream", {"name": self._name, "text": text})


# ---- rich display -----------------------------------------------------------

_REPRS = (
    ("_repr_html_", "text/html"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_latex_", "text/latex"),
    ("_repr_json_", "application/json"),
    ("_repr_javascript_", "application/javascript"),
)


def _b64(b):
    import base64
    return base64.b64encode(b).decode("ascii")


def _figure_png(fig):
    buf = io.BytesIO()
    fig.canvas.print_figure(buf, format="png", bbox_inches="tight")
    return buf.getvalue()


def mime_bundle(obj):
    """(data, metadata) for `obj`: text/plain always, plus whatever its
    _repr_*_ methods give (IPython's rules: classes get only their repr)."""
    data = {}
    md = {}
    if not isinstance(obj, type):
        mb = getattr(obj, "_repr_mimebundle_", None)
        if callable(mb):
            try:
                r = mb()
                if isinstance(r, tuple) and len(r) == 2:
                    d, m = r
                else:
                    d, m = r, {}
                if isinstance(d, dict):
                    data.update(d)
                if isinstance(m, dict):
                    md.update(m)
            except Exception:
                _formatter_failed("_repr_mimebundle_")
        for meth, mime in _REPRS:
            if mime in data:
                continue
            f = getattr(obj, meth, None)
            if not callable(f):
                continue
            try:
                r = f()
            except Exception:
                _formatter_failed(meth)
                continue
            if r is None:
                continue
            if isinstance(r, tuple) and len(r) == 2:
                r, m = r
                md[mime] = m
            if mime.startswith("image/") and mime != "image/svg+xml" and isinstance(r, (bytes, bytearray)):
                r = _b64(bytes(r))
            data[mime] = r
        if type(obj).__module__ == "matplotlib.figure" and "image/png" not in data:
            try:
                data["image/png"] = _b64(_figure_png(obj))
            except Exception:
                _formatter_failed("savefig")
    if "text/plain" not in data:
        try:
            data["text/plain"] = repr(obj)
        except Exception as e:
            data["text/plain"] = "<%s object (repr failed: %s)>" % (type(obj).__name__, e)
    return data, md


def _formatter_failed(what):
    sys.stderr.write("eddy-kernel: %s raised while formatting output:\n" % what)
    traceback.print_exc(file=sys.stderr)


# ---- magics -------------------------------------------------------------------

def _magic_sh(cmd):
    """`!cmd`: run through /bin/sh, its output streamed into the cell's stdout."""
    import subprocess
    sys.stdout.flush()
    p = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for line in iter(p.stdout.readline, b""):
        sys.stdout.write(line.decode("utf-8", "replace"))
    p.wait()
    sys.stdout.flush()


def _magic_time(src, ns):
    """`%time STATEMENT`: run it and print CPU and wall times like IPython."""
    import time
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        code = compile(src, "<timed exec>", "eval")
        mode = "eval"
    except SyntaxError:
        code = compile(src, "<timed exec>", "exec")
        mode = "exec"
    try:
        return eval(code, ns) if mode == "eval" else exec(code, ns)
    finally:
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print("CPU times: total: %s\nWall time: %s" % (_fmt_time(cpu), _fmt_time(wall)))


def _fmt_time(s):
    if s >= 1:
        return "%.2f s" % s
    if s >= 1e-3:
        return "%.2f ms" % (s * 1e3)
    return "%.2f us" % (s * 1e6)


_NOOP_MAGICS = ("matplotlib", "config", "load_ext", "reload_ext", "autoreload")


def transform_magics(code):
    """Turn the magics eddy-kernel supports into Python, line for line (so
    line numbers in tracebacks stay right). `%matplotlib ...` (and %config,
    %load_ext, %autoreload) are no-ops, `%time STMT` times a statement,
    `%%time` times the cell, `!cmd` and `%sx`/`%system` run a shell command.
    Anything else starting with % raises UsageError."""
    if "%" not in code and "!" not in code:
        return code
    lines = code.split("\n")
    if lines and lines[0].startswith("%%"):
        name = lines[0][2:].split(None, 1)[0] if lines[0][2:].strip() else ""
        if name == "time":
            body = "\n".join(lines[1:])
            return "_eddy_magic_time(%r, globals())" % body
        if name in ("capture", "writefile", "bash", "sh", "html", "javascript", "latex", "markdown"):
            raise UsageError("Cell magic `%%%%%s` is not supported by eddy-kernel "
                             "(supported: %%%%time)" % name)
        raise UsageError("Cell magic `%%%%%s` not found." % name)
    out = []
    depth = 0          # open brackets so far: a line inside them is not a magic
    cont = False       # the previous line ended with a backslash
    for line in lines:
        stripped = line.lstrip()
        indent = line[: len(line) - len(stripped)]
        inside = depth > 0 or cont
        code_part = line.split("#", 1)[0]
        depth = max(0, depth + sum(code_part.count(c) for c in "([{")
                    - sum(code_part.count(c) for c in ")]}"))
        cont = code_part.rstrip().endswith("\\")
        if inside:
            out.append(line)
        elif stripped.startswith("!") and not stripped.startswith("!="):
            out.append("%s_eddy_magic_sh(%r)" % (indent, stripped[1:]))
        elif stripped.startswith("%") and not stripped.startswith("%="):
            parts = stripped[1:].split(None, 1)
            name = parts[0] if parts else ""
            arg = parts[1] if len(parts) > 1 else ""
            if name in _NOOP_MAGICS:
                out.append(indent + "pass")
            elif name == "time":
                out.append("%s_eddy_magic_time(%r, globals())" % (indent, arg))
            elif name in ("sx", "system"):
                out.append("%s_eddy_magic_sh(%r)" % (indent, arg))
            elif name in ("pip", "conda"):
                raise UsageError("%%%s is not available in Eddy kernels: packages come "
                                 "from the image (kernels have no network)" % name)
            else:
                raise UsageError("Line magic function `%%%s` not found (eddy-kernel "
                                 "supports %%matplotlib, %%time, %%%%time and !cmd)." % name)
        else:
            out.append(line)
    return "\n".join(out)


# ---- the kernel ---------------------------------------------------------------

class Kernel:
    """One namespace (__main__) and an execution counter, shared by the
    notebook runner and the serve loop."""

    def __init__(self, mode):
        self.mode = mode                  # "notebook" or "serve"
        self.pid = os.getpid()
        self.count = 0
        self.ns = sys.modules["__main__"].__dict__
        self.outputs = None               # notebook mode: outputs of the running cell
        self.allow_stdin = mode == "serve"
        self.timeout = None               # seconds per cell (notebook mode)
        self.stdout = OutStream("stdout", self)
        self.stderr = OutStream("stderr", self)
        self._in_cell = False
        b = builtins
        b.display = display
        b.input = self._input
        self.ns.setdefault("__builtins__", builtins)
        self.ns["_eddy_magic_sh"] = _magic_sh
        self.ns["_eddy_magic_time"] = _magic_time
        if "MPLBACKEND" not in os.environ:
            os.environ["MPLBACKEND"] = "module://" + _INLINE_BACKEND
        sys.meta_path.insert(0, _Finder())
        sys.stdout = self.stdout
        sys.stderr = self.stderr

    # outputs ---------------------------------------------------------------
    def emit(self, msg_type, content):
        if msg_type != "stream":
            self.stdout.flush()
            self.stderr.flush()
        if self.mode == "serve":
            if os.getpid() != self.pid:
                # A forked child (multiprocessing, DataLoader workers) must not
                # write frames into the parent's socket: its text goes to the
                # process's own stdout/stderr, other outputs are dropped.
                if msg_type == "stream":
                    f = sys.__stderr__ if content["name"] == "stderr" else sys.__stdout__
                    if f is not None:
                        f.write(content["text"])
                        f.flush()
                return
            _k.send("iopub", msg_type, json.dumps(content, default=repr))
            return
        outs = self.outputs
        if outs is None:
            # Output outside a cell (atexit, a thread): keep it visible.
            if msg_type == "stream":
                sys.__stderr__.write(content["text"])
            return
        if msg_type == "stream":
            if outs and outs[-1]["output_type"] == "stream" and outs[-1]["name"] == content["name"]:
                outs[-1]["text"] += content["text"]
            else:
                outs.append({"output_type": "stream", "name": content["name"],
                             "text": content["text"]})
        elif msg_type == "display_data":
            outs.append({"output_type": "display_data", "data": content["data"],
                         "metadata": content.get("metadata", {})})
        elif msg_type == "execute_result":
            outs.append({"output_type": "execute_result", "data": content["data"],
                         "metadata": content.get("metadata", {}),
                         "execution_count": content["execution_count"]})
        elif msg_type == "error":
            outs.append({"output_type": "error", "ename": content["ename"],
                         "evalue": content["evalue"], "traceback": content["traceback"]})
        elif msg_type == "clear_output":
            outs.clear()

    def _input(self, prompt=""):
        self.stdout.flush()
        self.stderr.flush()
        if not self.allow_stdin:
            raise StdinNotImplementedError(
                "raw_input was called, but this frontend does not support input requests.")
        return _k.input_request(str(prompt), False)

    def _getpass(self, prompt="Password: ", stream=None):
        self.stdout.flush()
        if not self.allow_stdin:
            raise StdinNotImplementedError(
                "getpass was called, but this frontend does not support input requests.")
        return _k.input_request(str(prompt), True)

    # running code -------------------------------------------------------------
    def run_cell(self, code, count, silent=False):
        """Run `code` as cell `count` in the namespace. Returns None, or the
        error content (ename, evalue, traceback) after emitting it."""
        filename = "Cell In[%d]" % count
        err = None
        self._in_cell = True
        timer = self._arm_timer()
        try:
            try:
                src = transform_magics(code)
                linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
                tree = ast.parse(src, filename, "exec")
                last = None
                if tree.body and isinstance(tree.body[-1], ast.Expr):
                    last = tree.body.pop()
                flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
                if tree.body:
                    self._run_code(compile(tree, filename, "exec", flags=flags))
                if last is not None:
                    expr = ast.Expression(last.value)
                    value = self._run_code(compile(expr, filename, "eval", flags=flags))
                    if value is not None and not silent and not _suppressed(code):
                        builtins._ = value
                        data, md = mime_bundle(value)
                        self.emit("execute_result", {"data": data, "metadata": md,
                                                     "execution_count": count})
            finally:
                self._disarm_timer(timer)
        except BaseException as e:  # noqa: B902 - a cell may raise anything
            err = self._error_content(e)
        try:
            self.flush_figures()
        except BaseException as e:
            if err is None:
                err = self._error_content(e)
        self.stdout.flush()
        self.stderr.flush()
        if err is not None:
            self.emit("error", err)
        self._in_cell = False
        return err

    def _run_code(self, code):
        import inspect
        if code.co_flags & inspect.CO_COROUTINE:
            import asyncio
            return asyncio.run(eval(code, self.ns))
        return eval(code, self.ns)

    def _arm_timer(self):
        if not self.timeout:
            return None
        import signal
        t = self.timeout

        def on_alarm(signum, frame):
            raise CellTimeoutError("A cell timed out while it was being executed, after %g seconds." % t)
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, t)
        return old

    def _disarm_timer(self, old):
        if old is None:
            return
        import signal
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)

    def _error_content(self, e):
        tb = e.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == _SUPPORT_FILE:
            tb = tb.tb_next
        if isinstance(e, UsageError):
            lines = ["UsageError: %s" % e]
        else:
            lines = [s.rstrip("\n") for s in traceback.format_exception(type(e), e, tb)]
        try:
            evalue = str(e)
        except Exception:
            evalue = "<unprintable %s>" % type(e).__name__
        return {"ename": type(e).__name__, "evalue": evalue, "traceback": lines}

    def flush_figures(self):
        """Emit every open matplotlib figure as image/png, then close them
        (what the inline backend does when a cell ends)."""
        plt = sys.modules.get("matplotlib.pyplot")
        if plt is None:
            return
        nums = plt.get_fignums()
        if not nums:
            return
        try:
            for n in nums:
                fig = plt.figure(n)
                png = _figure_png(fig)
                self.emit("display_data", {"data": {"image/png": _b64(png),
                                                    "text/plain": repr(fig)},
                                           "metadata": {}})
        finally:
            plt.close("all")

    # notebook mode -------------------------------------------------------------
    def nb_run_cell(self, code, count):
        """Run one notebook cell; returns (ok, outputs as JSON text)."""
        self.outputs = []
        self.count = count
        err = self.run_cell(code, count)
        outs = self.outputs
        self.outputs = None
        return err is None, json.dumps(outs, default=repr)

    # serve mode: one method per request type --------------------------------------
    def dispatch(self, msg_type, content_json):
        """Handle a shell/control request; returns (reply type, reply JSON) or
        (None, None) for a type this kernel does not answer."""
        h = getattr(self, "do_" + msg_type, None)
        if h is None:
            return None, None
        content = json.loads(content_json)
        rtype, reply = h(content)
        return rtype, json.dumps(reply, default=repr)

    def do_kernel_info_request(self, c):
        v = sys.version_info
        return "kernel_info_reply", {
            "status": "ok",
            "protocol_version": "5.3",
            "implementation": "eddy-kernel",
            "implementation_version": _k.version,
            "language_info": {
                "name": "python",
                "version": "%d.%d.%d" % (v.major, v.minor, v.micro),
                "mimetype": "text/x-python",
                "codemirror_mode": {"name": "ipython", "version": 3},
                "pygments_lexer": "ipython3",
                "nbconvert_exporter": "python",
                "file_extension": ".py",
            },
            "banner": "Eddy kernel %s (Python %s)" % (_k.version, sys.version.split()[0]),
            "help_links": [],
        }

    def do_execute_request(self, c):
        code = c.get("code", "")
        silent = bool(c.get("silent", False))
        store = bool(c.get("store_history", not silent)) and not silent
        self.allow_stdin = bool(c.get("allow_stdin", True))
        count = self.count + 1 if store else max(self.count, 1)
        if store:
            self.count = count
        if not silent:
            self.emit("execute_input", {"code": code, "execution_count": count})
        err = self.run_cell(code, count, silent)
        if err is not None:
            reply = dict(err, status="error", execution_count=count,
                         user_expressions={}, payload=[])
            return "execute_reply", reply
        ue = {}
        for name, expr in (c.get("user_expressions") or {}).items():
            try:
                data, md = mime_bundle(eval(expr, self.ns))
                ue[name] = {"status": "ok", "data": data, "metadata": md}
            except Exception as e:
                ue[name] = dict(self._error_content(e), status="error")
        return "execute_reply", {"status": "ok", "execution_count": count,
                                 "user_expressions": ue, "payload": []}

    def do_complete_request(self, c):
        code = c.get("code", "")
        if not isinstance(code, str):
            code = ""
        pos = c.get("cursor_pos")
        if not isinstance(pos, int) or pos < 0 or pos > len(code):
            pos = len(code)
        try:
            matches, start, kinds = complete(self.ns, code, pos)
        except Exception:
            matches, start, kinds = [], pos, []
        types = [{"start": start, "end": pos, "text": t, "type": k} for t, k in zip(matches, kinds)]
        return "complete_reply", {"status": "ok", "matches": matches, "cursor_start": start,
                                  "cursor_end": pos,
                                  "metadata": {"_jupyter_types_experimental": types}}

    def do_inspect_request(self, c):
        code = c.get("code", "")
        if not isinstance(code, str):
            code = ""
        pos = c.get("cursor_pos")
        if not isinstance(pos, int) or pos < 0 or pos > len(code):
            pos = len(code)
        detail = 1 if c.get("detail_level") == 1 else 0
        try:
            text = inspect_text(self.ns, code, pos, detail)
        except Exception:
            text = None
        data = {"text/plain": text} if text is not None else {}
        return "inspect_reply", {"status": "ok", "found": text is not None, "data": data,
                                 "metadata": {}}

    def do_is_complete_request(self, c):
        code = c.get("code", "")
        import codeop
        try:
            src = transform_magics(code)
        except UsageError:
            return "is_complete_reply", {"status": "invalid"}
        try:
            r = codeop.compile_command(src, "<input>", "exec")
        except (SyntaxError, OverflowError, ValueError):
            return "is_complete_reply", {"status": "invalid"}
        if r is not None:
            return "is_complete_reply", {"status": "complete"}
        last = src.rstrip("\n").split("\n")[-1]
        indent = last[: len(last) - len(last.lstrip())]
        if last.rstrip().endswith(":"):
            indent += "    "
        return "is_complete_reply", {"status": "incomplete", "indent": indent}

    def do_comm_info_request(self, c):
        return "comm_info_reply", {"status": "ok", "comms": {}}

    def do_history_request(self, c):
        return "history_reply", {"status": "ok", "history": []}


# ---- code intelligence: completion and inspection -------------------------------
#
# What a Tab (complete_request) and a Shift+Tab (inspect_request) in the
# notebook ask. Both only read: names are resolved with
# inspect.getattr_static, so no property, __getattr__ or descriptor of user
# code runs, nothing is called, and modules are listed from their files
# (pkgutil) rather than imported. The exceptions, chosen because a user who
# writes them expects them: a submodule of a package already imported is
# imported when it is walked through (`paddle.nn.` when paddle.nn is not yet
# loaded), and a module's PEP 562 __getattr__ runs for a name its dir()
# advertises (paddle's lazy names). Replies are bounded: at most
# _COMPLETE_MAX matches, and the work stops after _COMPLETE_BUDGET_S.

_COMPLETE_MAX = 500
_COMPLETE_BUDGET_S = 1.0
_INSPECT_DOC_MAX = 16 * 1024      # characters of a docstring or the source in a reply
_INSPECT_MAX = 48 * 1024          # characters of the whole reply (replies past 64 KiB are rate-limited)
_MODULE_CACHE_S = 30.0
_CONTEXT = 1000                   # characters before the cursor a request looks at
_module_cache = {"at": -1e9, "names": ()}


class _Budget:
    """The time left for one request: expired() turns true once it is spent."""

    def __init__(self, seconds):
        import time
        self._clock = time.monotonic
        self._end = self._clock() + seconds

    def expired(self):
        return self._clock() >= self._end


def _kind_of(value):
    """The _jupyter_types_experimental kind of a (static) attribute value."""
    import inspect
    import types
    if isinstance(value, types.ModuleType):
        return "module"
    if isinstance(value, type):
        return "class"
    if isinstance(value, property) or inspect.isdatadescriptor(value):
        return "property"
    if isinstance(value, (classmethod, staticmethod)) or inspect.isroutine(value):
        return "function"
    return "instance"


_MISSING = object()


def _safe_getattr(obj, name):
    """obj.name without running user code, or _MISSING. Plain values,
    functions (bound), classes, modules and slots resolve; properties and
    other computed attributes do not. A module's lazy attribute resolves
    when the module lists it in dir() (see above)."""
    import inspect
    import types
    try:
        static = inspect.getattr_static(obj, name)
    except AttributeError:
        static = _MISSING
    except Exception:
        return _MISSING
    if isinstance(obj, types.ModuleType):
        if static is not _MISSING:
            return static
        sub = _submodule(obj, name)
        if sub is not _MISSING:
            return sub
        try:
            listed = name in _dir(obj)
        except Exception:
            listed = False
        if listed and "__getattr__" in getattr(obj, "__dict__", {}):
            try:
                return getattr(obj, name)
            except Exception:
                return _MISSING
        return _MISSING
    if static is _MISSING:
        return _MISSING
    if isinstance(static, (types.FunctionType, types.BuiltinFunctionType, types.MethodDescriptorType,
                           types.WrapperDescriptorType, types.ClassMethodDescriptorType,
                           classmethod, staticmethod)):
        try:
            return static.__get__(None if isinstance(obj, type) else obj, obj if isinstance(obj, type) else type(obj))
        except Exception:
            return static
    if isinstance(static, types.MemberDescriptorType) and not isinstance(obj, type):
        try:
            return static.__get__(obj, type(obj))   # a __slots__ value: no code runs
        except Exception:
            return _MISSING
    if isinstance(static, types.GetSetDescriptorType) and not isinstance(obj, type):
        # C-level computed attributes: only those of built-in types (x.real, f.__name__).
        if type(obj).__module__ == "builtins":
            try:
                return static.__get__(obj, type(obj))
            except Exception:
                return _MISSING
        return _MISSING
    if hasattr(type(static), "__get__") and not isinstance(static, (type, types.ModuleType)):
        return _MISSING   # property or custom descriptor: would run code
    return static


def _submodule(mod, name):
    """mod.name as an already imported or importable submodule of package
    mod (imported), else _MISSING."""
    import importlib
    full = "%s.%s" % (getattr(mod, "__name__", ""), name)
    if full in sys.modules:
        return sys.modules[full]
    path = getattr(mod, "__path__", None)
    if path is None:
        return _MISSING
    import importlib.machinery
    try:
        if importlib.machinery.PathFinder.find_spec(full, list(path)) is None:
            return _MISSING
        return importlib.import_module(full)
    except Exception:
        return _MISSING


def _dir(obj):
    """The attribute names of obj without running its code: a class's come
    from its MRO's __dict__ (no metaclass __dir__), an instance's from its
    __dict__, its slots and its class's (no __dir__ or __getattr__ of
    user code); a module's from dir() (a PEP 562 __dir__ lists its lazy
    names)."""
    import types
    if isinstance(obj, types.ModuleType):
        try:
            return dir(obj)
        except Exception:
            d = getattr(obj, "__dict__", None)
            return sorted(d) if isinstance(d, dict) else []
    cls = obj if isinstance(obj, type) else type(obj)
    names = set()
    for k in getattr(cls, "__mro__", (cls,)):
        d = type.__dict__["__dict__"].__get__(k)   # the class's own mapping, no lookup hooks
        names.update(n for n in d.keys() if isinstance(n, str))
    if not isinstance(obj, type):
        try:
            d = object.__getattribute__(obj, "__dict__")
        except Exception:
            d = None
        if isinstance(d, dict):
            names.update(n for n in d.keys() if isinstance(n, str))
    return sorted(names)


def _resolve(ns, dotted):
    """The object a dotted name (`paddle.nn.Linear`) names in ns, or _MISSING."""
    parts = dotted.split(".")
    if not parts or not all(p.isidentifier() for p in parts):
        return _MISSING
    if parts[0] in ns:
        obj = ns[parts[0]]
    elif hasattr(builtins, parts[0]):
        obj = getattr(builtins, parts[0])
    else:
        return _MISSING
    for p in parts[1:]:
        obj = _safe_getattr(obj, p)
        if obj is _MISSING:
            return _MISSING
    return obj


def _top_modules(budget):
    """Names of the top-level modules importable now (built-in ones and
    those on sys.path), cached for _MODULE_CACHE_S."""
    import pkgutil
    import time
    now = time.monotonic()
    if now - _module_cache["at"] < _MODULE_CACHE_S:
        return _module_cache["names"]
    names = set(sys.builtin_module_names)
    names.update(n for n in sys.modules if "." not in n)
    complete = True
    for entry in list(sys.path):
        if budget.expired():
            complete = False
            break
        try:
            for m in pkgutil.iter_modules([entry or "."]):
                names.add(m.name)
        except Exception:
            continue
    names = tuple(sorted(n for n in names if n.isidentifier()))
    if complete:
        _module_cache["at"], _module_cache["names"] = now, names
    return names


def _package_locations(dotted):
    """The folders a package's submodules live in, found without importing
    it (unless it is imported already), or None when it is not a package."""
    import importlib.machinery
    mod = sys.modules.get(dotted)
    if mod is not None:
        p = getattr(mod, "__path__", None)
        return list(p) if p is not None else None
    parts = dotted.split(".")
    path = None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        m = sys.modules.get(name)
        if m is not None:
            path = getattr(m, "__path__", None)
            if path is None:
                return None
            path = list(path)
            continue
        try:
            spec = importlib.machinery.PathFinder.find_spec(name, path)
        except Exception:
            return None
        if spec is None or spec.submodule_search_locations is None:
            return None
        path = list(spec.submodule_search_locations)
    return path


def _module_names(prefix, budget):
    """Complete a module path: `pad` -> paddle, `paddle.n` -> paddle.nn."""
    import pkgutil
    if "." not in prefix:
        return [n for n in _top_modules(budget)
                if n.startswith(prefix) and (prefix.startswith("_") or not n.startswith("_"))]
    pkg, _, last = prefix.rpartition(".")
    # Imported ones too: some are not files of a package (os.path).
    out = {n for n in list(sys.modules) if n.startswith(prefix) and n.count(".") == prefix.count(".")}
    locs = _package_locations(pkg)
    if not locs:
        return sorted(out)
    try:
        for m in pkgutil.iter_modules(locs):
            if m.name.startswith(last):
                out.add(pkg + "." + m.name)
            if budget.expired():
                break
    except Exception:
        pass
    return sorted(out)


def _static_module_names(dotted, budget):
    """The names `from dotted import ...` offers for a module that is not
    imported: its submodules and what its source defines at top level (read
    with ast, not run)."""
    import importlib.util
    import pkgutil
    names = set()
    locs = _package_locations(dotted)
    if locs:
        try:
            for m in pkgutil.iter_modules(locs):
                names.add(m.name)
                if budget.expired():
                    break
        except Exception:
            pass
    origin = None
    try:
        parent = dotted.rpartition(".")[0]
        if not parent or parent in sys.modules:
            spec = importlib.util.find_spec(dotted)
        else:
            import importlib.machinery
            spec = importlib.machinery.PathFinder.find_spec(dotted, _package_locations(parent))
        origin = spec.origin if spec is not None else None
    except Exception:
        origin = None
    if origin and origin.endswith(".py") and not budget.expired():
        try:
            with open(origin, "rb") as f:
                tree = ast.parse(f.read(2 * 1024 * 1024))
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
                elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                    for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                        if isinstance(t, ast.Name):
                            names.add(t.id)
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for a in node.names:
                        if a.name != "*":
                            names.add((a.asname or a.name).split(".")[0])
        except Exception:
            pass
    return names


def _attr_names(obj, prefix, budget):
    """[(name, kind)] of obj's attributes starting with prefix; private
    ones (_x) only when the prefix starts with _, dunders with __."""
    out = []
    try:
        names = _dir(obj)
    except Exception:
        return out
    for n in names:
        if not isinstance(n, str) or not n.startswith(prefix):
            continue
        if n.startswith("_") and not prefix.startswith("_"):
            continue
        if n.startswith("__") and not prefix.startswith("__"):
            continue
        import inspect
        try:
            kind = _kind_of(inspect.getattr_static(obj, n))
        except Exception:
            kind = "instance"
        out.append((n, kind))
        if len(out) >= _COMPLETE_MAX or budget.expired():
            break
    return out


def _name_matches(ns, prefix):
    """Bare names: keywords, the namespace, builtins."""
    import keyword
    seen = set()
    out = []
    for n in list(keyword.kwlist) + ["True", "False", "None"]:
        if n.startswith(prefix) and n not in seen:
            seen.add(n)
            out.append((n, "keyword"))
    for src in (ns, vars(builtins)):
        for n, v in list(src.items()):
            if not isinstance(n, str) or n in seen or not n.startswith(prefix):
                continue
            if n.startswith("_") and not prefix.startswith("_"):
                continue
            seen.add(n)
            out.append((n, _kind_of(v)))
    return out


def _key_matches(obj, quote, prefix):
    """String keys of a dict starting with prefix, escaped for quote."""
    if not isinstance(obj, dict):
        return []
    out = []
    for k in list(dict.keys(obj))[:100000]:
        if isinstance(k, str) and k.startswith(prefix):
            text = k.replace("\\", "\\\\").replace(quote, "\\" + quote)
            out.append((text, "key"))
    return out


def _open_string(line):
    """(index, quote) of a string literal still open at the end of line
    (the quote is ' " \'\'\' or \"\"\"), or None; a # outside strings ends the scan."""
    i, n, q, at = 0, len(line), None, 0
    while i < n:
        ch = line[i]
        if q is None:
            if ch == "#":
                return None
            if ch in "'\"":
                q = ch * 3 if line.startswith(ch * 3, i) else ch
                at = i
                i += len(q)
                continue
        elif ch == "\\":
            i += 2
            continue
        elif line.startswith(q, i):
            i += len(q)
            q = None
            continue
        i += 1
    return (at, q) if q else None


def _complete_from_import(ns, line, pos, budget):
    """`from a.b import c|`, `from a.b import (c, d|`."""
    import re
    m = re.match(r"\s*from\s+([\w.]+)\s+import\s+(?:\(\s*)?(?:[\w\s,]*,\s*)?(\w*)$", line)
    if not m or re.search(r"\bas\s+\w*$", line):
        return None
    mod, word = m.group(1), m.group(2)
    loaded = sys.modules.get(mod)
    if loaded is not None:
        names = {n for n, _ in _attr_names(loaded, word, budget)}
        names.update(n.rpartition(".")[2] for n in _module_names(mod + "." + word, budget))
    else:
        names = _static_module_names(mod, budget)
    return pos - len(word), [(n, "module" if loaded is None else _kind_of(_safe_static(loaded, n)))
                             for n in sorted(names)
                             if n.startswith(word) and (word.startswith("_") or not n.startswith("_"))]


def _complete_import(ns, line, pos, budget):
    """`import a.b|`, `import x as y, a.b|`, `from a.b|`."""
    import re
    m = (re.match(r"\s*import\s+(?:[\w.]+\s*(?:as\s+\w+\s*)?,\s*)*([\w.]*)$", line) or
         re.match(r"\s*from\s+([\w.]*)$", line))
    if not m:
        return None
    word = m.group(1)
    return pos - len(word), [(n, "module") for n in _module_names(word, budget)]


def _complete_key(ns, line, pos, budget):
    """`d["ke|`: the string keys of a dict."""
    import re
    m = re.search(r"([A-Za-z_][\w.]*)\s*\[\s*(['\"])((?:[^'\"\\]|\\.)*)$", line)
    if not m:
        return None
    obj = _resolve(ns, m.group(1))
    return pos - len(m.group(3)), (_key_matches(obj, m.group(2), m.group(3)) if obj is not _MISSING else [])


def _complete_path(ns, line, pos, budget):
    """Inside a string: the files and folders its text starts (relative to
    the kernel's working directory, or absolute, ~ for home); folders end
    with /."""
    st = _open_string(line)
    if st is None:
        return None
    text = line[st[0] + len(st[1]):]
    folder, base = os.path.split(text)
    where = os.path.expanduser(folder) if folder else "."
    out = []
    try:
        with os.scandir(where) as it:
            for e in it:
                if not e.name.startswith(base) or (e.name.startswith(".") and not base.startswith(".")):
                    continue
                try:
                    is_dir = e.is_dir()
                except OSError:
                    is_dir = False
                out.append((e.name + ("/" if is_dir else ""), "path"))
                if len(out) >= _COMPLETE_MAX or budget.expired():
                    break
    except OSError:
        return pos - len(base), []
    return pos - len(base), sorted(out)


def _call_params(ns, line, word):
    """`f(a, k|`: the parameters of the function called there that can be
    passed by name and start with word, as `name=`."""
    import inspect
    import re
    depth = 0
    for i in range(len(line) - 1, -1, -1):
        ch = line[i]
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                if ch != "(":
                    return []
                m = re.search(r"([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\s*$", line[:i])
                if not m:
                    return []
                fn = _resolve(ns, m.group(1))
                if fn is _MISSING or not callable(fn):
                    return []
                try:
                    sig = inspect.signature(fn)
                except (TypeError, ValueError):
                    return []
                kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
                return [(p.name + "=", "param") for p in sig.parameters.values()
                        if p.kind in kinds and p.name.startswith(word) and p.name not in ("self", "cls")]
            depth -= 1
    return []


def _complete_attr(ns, line, pos, budget):
    """`obj.at|` for a dotted name of the namespace. The matches are whole
    dotted names from the start of it (`os.pa` -> os.path), as IPython's
    completer gives them; a frontend may show only their last part."""
    import re
    m = re.search(r"(?<![\w.)\]'\"])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\.(\w*)$", line)
    if not m:
        return None
    obj = _resolve(ns, m.group(1))
    found = _attr_names(obj, m.group(2), budget) if obj is not _MISSING else []
    head = m.group(1) + "."
    return pos - len(m.group(0)), [(head + n, k) for n, k in found]


def _complete_name(ns, line, pos, budget):
    """A bare name: the parameters of the call it is in (`name=`), then
    keywords, the namespace and builtins."""
    import re
    m = re.search(r"(?<![\w.])([A-Za-z_]\w*)$", line)
    if not m:
        return None
    word = m.group(1)
    return pos - len(word), _call_params(ns, line[:len(line) - len(word)], word) + _name_matches(ns, word)


_COMPLETERS = (_complete_from_import, _complete_import, _complete_key, _complete_path,
               _complete_attr, _complete_name)


def complete(ns, code, pos):
    """Completions at cursor pos (characters) of code, Jupyter style:
    (matches, cursor_start, kinds). The first of _COMPLETERS that knows
    the context answers: `from a.b import c`, `import a.b`, `d["key`, a
    path in a string, `obj.attr`, a bare name."""
    budget = _Budget(_COMPLETE_BUDGET_S)
    line = code[code.rfind("\n", 0, pos) + 1:pos]
    if len(line) > _CONTEXT:
        # Only the end of a very long line matters (and the patterns
        # must not backtrack over all of it); it cannot be an import.
        line = "\x00" + line[-_CONTEXT:]
    start, found = pos, []
    for completer in _COMPLETERS:
        r = completer(ns, line, pos, budget)
        if r is not None:
            start, found = r
            break
    found = found[:_COMPLETE_MAX]
    return [t for t, _ in found], start, [k for _, k in found]


def _safe_static(obj, name):
    import inspect
    try:
        return inspect.getattr_static(obj, name)
    except Exception:
        return _MISSING


def _name_at(code, pos):
    """The dotted name under or just before the cursor (`paddle.nn.Linear(|`
    and `paddle.zeros([2, 3], |` name the function called). Looks at most
    _CONTEXT characters back."""
    import re
    lo = max(0, pos - _CONTEXT)
    best = ""
    for m in re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*").finditer(code, lo, min(len(code), pos + 200)):
        if m.start() > pos:
            break
        if m.start() <= pos <= m.end():
            # up to the end of the part under the cursor: `paddle.n|n.Linear` -> paddle.nn
            end = pos + len(re.match(r"\w*", code[pos:m.end()]).group(0))
            return code[m.start():end]
        if pos - m.end() > 200:
            continue
        gap = code[m.end():pos]
        if gap.strip() in ("", "(") or re.fullmatch(r"\(\s*[^()]*", gap):
            best = m.group(0)
    return best


def _clip(s, n):
    return s if len(s) <= n else s[:n] + "\n[... %d more characters]" % (len(s) - n)


def inspect_text(ns, code, pos, detail=0):
    """IPython's `obj?` (detail 0) or `obj??` (detail 1, with source) for the
    name at the cursor, as plain text; None when it names nothing."""
    import inspect
    import types
    name = _name_at(code, pos)
    if not name:
        return None
    obj = _resolve(ns, name)
    if obj is _MISSING:
        # A computed attribute (property): show its documentation, not its value.
        head, _, last = name.rpartition(".")
        owner = _resolve(ns, head) if head else _MISSING
        static = _safe_static(owner, last) if owner is not _MISSING else _MISSING
        if static is _MISSING:
            return None
        doc = inspect.getdoc(static) or ""
        return "Type:      %s\nDocstring:\n%s" % (type(static).__name__, _clip(doc or "<no docstring>", _INSPECT_DOC_MAX))
    lines = []
    sig = None
    is_class = isinstance(obj, type)
    if callable(obj):
        try:
            sig = str(inspect.signature(obj))
        except (TypeError, ValueError):
            sig = None
    if sig is not None:
        lines.append("%s %s%s" % ("Init signature:" if is_class else "Signature:     ", name, sig))
    lines.append("Type:           %s" % type(obj).__name__)
    if not is_class and not callable(obj) and not isinstance(obj, types.ModuleType):
        try:
            r = repr(obj)
        except Exception as e:
            r = "<repr failed: %s>" % e
        lines.append("String form:    %s" % _clip(r, 2000).replace("\n", "\n                "))
        try:
            n = len(obj) if isinstance(obj, (str, bytes, list, tuple, dict, set, frozenset)) else None
        except Exception:
            n = None
        if n is not None:
            lines.append("Length:         %d" % n)
    try:
        f = inspect.getfile(obj if (is_class or isinstance(obj, types.ModuleType) or inspect.isroutine(obj)) else type(obj))
        lines.append("File:           %s" % f)
    except (TypeError, OSError):
        pass
    doc = inspect.getdoc(obj) if (is_class or callable(obj) or isinstance(obj, types.ModuleType)) else (type(obj).__doc__ and inspect.getdoc(type(obj)))
    lines.append("Docstring:\n%s" % _clip(doc or "<no docstring>", _INSPECT_DOC_MAX))
    if is_class:
        # The class's own __init__ docstring only (getdoc would inherit object's).
        init = obj.__dict__.get("__init__")
        idoc = init.__doc__ if isinstance(getattr(init, "__doc__", None), str) else None
        idoc = inspect.cleandoc(idoc) if idoc else None
        if idoc and idoc != doc:
            lines.append("Init docstring:\n%s" % _clip(idoc, _INSPECT_DOC_MAX))
    if detail:
        try:
            lines.append("Source:\n%s" % _clip(inspect.getsource(obj), _INSPECT_DOC_MAX))
        except (TypeError, OSError):
            pass
    return _clip("\n".join(lines), _INSPECT_MAX)


def _suppressed(code):
    """IPython hides the value of a cell whose last line ends with ';'."""
    for line in reversed(code.rstrip().split("\n")):
        s = line.split("#", 1)[0].rstrip()
        if s:
            return s.endswith(";")
    return False


_kernel = None


def display(*objs, raw=False, metadata=None, transient=None, display_id=None,
            clear=False, **kwargs):
    """IPython-style display(): each object goes out as display_data with its
    rich representations. Outside a kernel it prints them."""
    if _kernel is None:
        print(*objs)
        return None
    if clear:
        _kernel.emit("clear_output", {"wait": False})
    for obj in objs:
        if raw:
            data, md = dict(obj), dict(metadata or {})
        else:
            data, md = mime_bundle(obj)
            if metadata:
                md.update(metadata)
        content = {"data": data, "metadata": md, "transient": {}}
        if display_id:
            content["transient"] = {"display_id": str(display_id)}
        _kernel.emit("display_data", content)
    return None


def clear_output(wait=False):
    if _kernel is not None:
        _kernel.emit("clear_output", {"wait": bool(wait)})


# ---- imports we adjust ----------------------------------------------------------

_INLINE_SRC = '''
"""matplotlib backend of eddy-kernel: Agg rendering, show() emits figures."""
from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas
from matplotlib.backend_bases import FigureManagerBase as FigureManager


def show(block=None):
    import eddy_kernel_support
    if eddy_kernel_support._kernel is not None:
        eddy_kernel_support._kernel.flush_figures()
'''


class _Loader:
    def __init__(self, wrapped=None):
        self.wrapped = wrapped

    def create_module(self, spec):
        if self.wrapped is not None:
            return self.wrapped.create_module(spec)
        return None

    def exec_module(self, module):
        if self.wrapped is None:
            exec(compile(_INLINE_SRC, "<%s>" % _INLINE_BACKEND, "exec"), module.__dict__)
            return
        self.wrapped.exec_module(module)
        # IPython.display.display prints when no IPython shell runs; make it ours.
        for n in ("display", "clear_output"):
            if hasattr(module, n):
                setattr(module, n, globals()[n])


class _Finder:
    """Provides the inline matplotlib backend module and patches IPython's
    display functions to this kernel's once IPython is imported."""

    _PATCH = ("IPython.display", "IPython.core.display_functions", "IPython.core.display")

    def find_spec(self, name, path=None, target=None):
        import importlib.machinery
        import importlib.util
        if name == _INLINE_BACKEND:
            return importlib.util.spec_from_loader(name, _Loader())
        if name in self._PATCH:
            for f in sys.meta_path:
                if f is self or not hasattr(f, "find_spec"):
                    continue
                spec = f.find_spec(name, path, target)
                if spec is not None and spec.loader is not None:
                    spec.loader = _Loader(spec.loader)
                    return spec
        return None

    def invalidate_caches(self):
        pass


def start(mode, timeout=0.0):
    """Make this process a kernel: called once by eddy-kernel after Python
    starts. mode is "notebook" or "serve"; timeout is seconds per cell (0: none)."""
    global _kernel
    _kernel = Kernel(mode)
    _kernel.timeout = timeout or None
    if mode == "serve":
        import getpass
        getpass.getpass = _kernel._getpass
    return _kernel
