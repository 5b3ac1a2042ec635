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
        pos = c.get("cursor_pos")
        if not isinstance(pos, int) or pos < 0 or pos > len(code):
            pos = len(code)
        import re
        import rlcompleter
        m = re.search(r"[A-Za-z_][\w.]*$|\.$", code[:pos])
        token = m.group(0) if m else ""
        start = pos - len(token)
        matches = []
        if token:
            comp = rlcompleter.Completer(self.ns)
            i = 0
            while len(matches) < 500:
                try:
                    s = comp.complete(token, i)
                except Exception:
                    break
                if s is None:
                    break
                s = s.rstrip("(")
                if s not in matches:
                    matches.append(s)
                i += 1
        return "complete_reply", {"status": "ok", "matches": matches, "cursor_start": start,
                                  "cursor_end": pos, "metadata": {}}

    def do_inspect_request(self, c):
        code = c.get("code", "")
        pos = c.get("cursor_pos")
        if not isinstance(pos, int) or pos < 0 or pos > len(code):
            pos = len(code)
        import re
        name = ""
        for m in re.finditer(r"[A-Za-z_][\w.]*", code):
            if m.start() <= pos <= m.end() or (m.end() < pos and code[m.end():pos].strip() in ("(", "")):
                name = m.group(0)
        obj, found = None, False
        if name:
            parts = name.split(".")
            try:
                if parts[0] in self.ns:
                    obj = self.ns[parts[0]]
                else:
                    obj = getattr(builtins, parts[0])
                for p in parts[1:]:
                    obj = getattr(obj, p)
                found = True
            except Exception:
                found = False
        data = {}
        if found:
            import inspect
            text = ["Type:      %s" % type(obj).__name__]
            try:
                text.append("Signature: %s%s" % (parts[-1], inspect.signature(obj)))
            except (TypeError, ValueError):
                pass
            doc = inspect.getdoc(obj)
            if doc:
                text.append("Docstring:\n" + doc)
            data["text/plain"] = "\n".join(text)
        return "inspect_reply", {"status": "ok", "found": found, "data": data, "metadata": {}}

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
