"""toysim from Python: the toy machine of the FlashAttention course, as dicts and NumPy arrays.

A thin layer over the same C++ libraries as the ``toysim`` command line: every function here
returns what the matching command prints with ``--format json`` (as Python objects, under
``.json``), plus views of it that are easier to use in a notebook::

    import toysim
    p = toysim.load("programs/p5_online_softmax.toy", n=8)
    r = p.run()
    r.counters["reads"], r.outputs["out"], r.passed
    p.cost()["reads"]["x"](n=1_000_000)         # a formula of the parameters
    rows = p.sweep(n=[64, 128, 256])             # pandas.DataFrame(rows)
    s = toysim.Session(p); s.break_at("43"); s.continue_(); s.back(2)
    toysim.grade("p2_matmul_3reg", "my_p2.toy").score
    p.view()                                     # in Jupyter: the offline trace viewer

Errors are :class:`ToyError`, whose ``str()`` is the message ``toysim`` prints on stderr for
the same input (``file:line:col: error: ...``, the source line and a caret), without its final
newline. Ctrl-C stops a long run with ``KeyboardInterrupt``.
"""

import html as _html
import itertools as _itertools
import json as _json
import numbers as _numbers
import os as _os

from . import _toysim
from ._toysim import ToyError

__all__ = ["ToyError", "load", "grade", "Program", "Result", "Trace", "Cost", "Formula", "Sweep", "Grade", "View", "Session",
           "Stop"]

ToyError.__module__ = __name__
__version__ = _toysim.__version__


def _sets(params):
    """Keyword parameters as the CLI's ``--set NAME=VALUE`` settings (whole numbers only)."""
    sets = []
    for name, value in params.items():
        if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
            raise TypeError(f"parameter {name}: a whole number, not {value!r}")
        sets.append(f"{name}={int(value)}")
    return sets


def _merged(base, params):
    """``base`` (settings as "n=4") with ``params`` overriding, in the order first given."""
    merged = dict(s.split("=", 1) for s in base)
    merged.update(s.split("=", 1) for s in _sets(params))
    return [f"{k}={v}" for k, v in merged.items()]


def _names_a_file(text):
    """A string that names an existing file, or one line ending in .toy (a path mistyped gets
    the CLI's "cannot open" rather than a parse error of its own text)."""
    if "\n" in text:
        return False
    try:
        return _os.path.isfile(text) or text.rstrip().endswith(".toy")
    except (ValueError, OSError):
        return False


def load(path_or_source, **params):
    """Load a program: ``load(path_or_source, **params) -> Program``.

    ``path_or_source`` is a path (a ``str`` naming an existing file or ending in ``.toy``, or
    any ``os.PathLike``) or else the program's text, named ``<string>`` in messages. ``params``
    are what ``--set NAME=VALUE`` sets on the command line (whole numbers), e.g.
    ``load(p, n=4096, d=64)``.
    Raises :class:`ToyError` (the CLI's located message) for a malformed program or setting.
    """
    if isinstance(path_or_source, _os.PathLike):
        path, text = _os.fspath(path_or_source), None
    elif isinstance(path_or_source, str):
        path, text = (path_or_source, None) if _names_a_file(path_or_source) else (None, path_or_source)
    else:
        raise TypeError(f"load() takes a path or the program's text, not {type(path_or_source).__name__}")
    return Program(_toysim.load(path, text, _sets(params)))


class Program:
    """A compiled program at given parameters (from :func:`load`).

    Attributes: ``path`` (as messages name it; ``<string>`` for text), ``text`` (the source),
    ``params`` (every parameter and let with its value, as run's JSON has them) and ``arrays``
    (name -> ``(role, shape)``).
    """

    def __init__(self, compiled):
        self._p = compiled

    @property
    def path(self):
        return self._p.path

    @property
    def text(self):
        return self._p.text

    @property
    def params(self):
        return dict(self._p.params)

    @property
    def arrays(self):
        return {name: (role, tuple(shape)) for name, role, shape in self._p.arrays}

    def __repr__(self):
        shown = ", ".join(s for s in self._p.sets)
        return f"toysim.load({self.path!r}{', ' if shown else ''}{shown})"

    def with_params(self, **params):
        """The same program at other parameters: ``with_params(**params) -> Program`` (the others kept)."""
        return Program(self._p.at(_merged(self._p.sets, params)))

    def run(self, max_steps=None):
        """Run it: ``run(max_steps=None) -> Result``, as ``toysim run --format json``.

        ``max_steps`` is ``--max-steps`` (default: the CLI's, 10,000,000,000). A run-time fault
        (index out of bounds, the step limit, ...) raises :class:`ToyError` with the CLI's
        message; the exception's ``result`` is the :class:`Result` the CLI's JSON reports then
        (``"ok": false``, the fault, the counters up to it). Ctrl-C stops the run
        (``KeyboardInterrupt``).
        """
        if max_steps is not None and max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        handle = self._p.run(max_steps)
        result = Result(self, handle)
        if handle.fault is not None:
            error = ToyError(handle.fault)
            error.result = result
            raise error
        return result

    def trace(self, values="auto", max_steps=10_000):
        """The event stream: ``trace(values="auto", max_steps=10000) -> Trace``, as ``toysim trace --format json``.

        ``values``: ``"symbolic"`` (the seed's names, a00·b00), ``"numeric"``, or ``"auto"``
        (symbolic except for tile programs). A fault (the step limit included) raises
        :class:`ToyError`; its ``trace`` is the :class:`Trace` up to it.
        """
        if values not in ("auto", "symbolic", "numeric"):
            raise ValueError("values is 'auto', 'symbolic' or 'numeric'")
        if max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        text, counters, error = self._p.trace(values, max_steps)
        trace = Trace(_json.loads(text), _json.loads(counters))
        if error is not None:
            exc = ToyError(error)
            exc.trace = trace
            raise exc
        return trace

    def cost(self, heads=1, workers=None, cold_launches=False, machine=None):
        """What it costs, without running: ``cost(heads=1, workers=None, cold_launches=False, machine=None) -> Cost``.

        As ``toysim cost --format json`` (``.json``); ``cost["reads"]["Q"]`` is a
        :class:`Formula`, callable with other parameters. ``heads``, ``workers`` and
        ``cold_launches`` are the CLI's options for a program with a cache; ``machine="h100"``
        (``--machine``) adds each launch's predicted time, ``cost.json["predicted_time"]``.
        """
        text, formulas = self._p.cost(heads, workers or 0, cold_launches, machine or "")
        return Cost(self, _json.loads(text), _json.loads(formulas))

    def tune(self, objective="time", machine=None, heads=1, dtype="fp32", top=10, kernel=None, gpu=False, sample=5, repeats=20, **lists):
        """A space of parameters ranked by the model: ``tune(objective="time", machine=None, heads=1, dtype="fp32", top=10, kernel=None, gpu=False, sample=5, repeats=20, **lists) -> dict``.

        As ``toysim tune --vary ... --format json``: ``p.tune(Br=[64, 128], Bc=[32, 64])`` ranks
        every combination (the program's own parameters otherwise) by ``objective`` (``"time"``,
        ``"dram"`` or ``"cycles"``); ``["ranked"]`` is a list of rows (a DataFrame's), best
        first, and ``["dropped"]`` the points refused, each with ``"why"``.

        ``kernel`` (``--kernel``: ``"generated"`` or a version of the program's kernel) ranks
        each point as that kernel runs it; ``gpu=True`` (``--gpu``) runs the ``top`` points and
        ``sample`` of the rest (``None``: all) on the GPU: rows gain ``"measured_seconds"`` and
        ``["gpu"]`` holds the model's pick against the best measured and Spearman's ρ.
        ``machine`` (``--machine``) names the machine that ranks them; ``None`` is the GPU's own
        (``"h100"`` or ``"h200"``) with ``gpu=True``, else ``"h100"``.
        """
        vary = [f"{name}={','.join(str(v) for v in values)}" for name, values in lists.items()]
        return _json.loads(self._p.tune(vary, objective, machine or "", heads, dtype, top, kernel or "", gpu, -1 if sample is None else sample, repeats))

    def tune_schedule(self, registers=None):
        """The fewest cycles of this straight-line program's products: ``tune_schedule(registers=None) -> dict``.

        As ``toysim tune --schedule --format json``: ``cycles``, ``counts``, ``lower_bound``,
        ``proof`` (why no program is shorter) and ``source``, the program found as .toy text.
        ``registers`` searches with another register file (``--registers``).
        """
        return _json.loads(self._p.tune_schedule(registers or 0))

    def sweep(self, **lists):
        """Every counter across parameter values: ``sweep(**lists) -> Sweep`` (a list of rows).

        ``p.sweep(n=[64, 128, 256])`` runs each setting (several lists: every combination, the
        first varying slowest) with the program's own parameters otherwise, as
        ``toysim sweep --set n=64,128,256`` (with the program's settings given as one-value
        lists first). Each row is a flat dict: the parameters (lets too), the counters the
        sweep's table lists, and ``ok``: ready for ``pandas.DataFrame(rows)``. ``.json`` is the
        CLI's JSON.
        """
        if not lists:
            raise TypeError("sweep() needs at least one parameter with a list of values, e.g. sweep(n=[64, 128])")
        axes = {name: None for name in (s.split("=", 1)[0] for s in self._p.sets)}
        own = dict(s.split("=", 1) for s in self._p.sets)
        for name, values in lists.items():
            values = [values] if isinstance(values, _numbers.Integral) else list(values)
            if not values:
                raise ValueError(f"sweep: no values for {name}")
            axes[name] = values
        for name in axes:
            if axes[name] is None:
                axes[name] = [int(own[name])]
        names = list(axes)
        settings, labels = [], []
        for combo in _itertools.product(*(axes[name] for name in names)):
            sets = _sets(dict(zip(names, combo)))
            settings.append(sets)
            labels.append(" ".join(sets))
        text, rows = self._p.sweep(settings, labels)
        return Sweep(_json.loads(rows), _json.loads(text))

    def view(self, values="auto", max_steps=None):
        """The trace viewer ``toysim view`` writes: ``view(values="auto", max_steps=None) -> View``.

        In Jupyter the result shows the page inline (an iframe; it works offline). Runs longer
        than ``max_steps`` (default 100,000) are refused.
        """
        if values not in ("auto", "symbolic", "numeric"):
            raise ValueError("values is 'auto', 'symbolic' or 'numeric'")
        if max_steps is not None and max_steps < 1:
            raise ValueError("max_steps must be at least 1")
        return View(self._p.view(values, max_steps))

    def session(self, values="auto", max_steps=None):
        """A stepping :class:`Session` over this program (as ``toysim.Session(program)``)."""
        return Session(self, values=values, max_steps=max_steps)


class Result:
    """A run's results (``Program.run``), all from ``toysim run --format json``'s data.

    - ``json``: the exact dict ``toysim run --format json`` prints;
    - ``counters``: every counter by its name in the counter table (``cycles``, ``LOAD`` and
      every other opcode, ``reads``, ``reads(K)``, ``arithmetic_intensity``, ...), the value the
      JSON has at that counter's path;
    - ``arrays``: per-array traffic (``json["counters"]["dram"]["arrays"]``);
    - ``checks``, ``expects``: the verdicts (``json["check"]["checks"]``,
      ``json["expect"]["figures"]``); ``passed``: ``json["ok"]``; ``fault``: None or the message;
    - ``outputs``: each output array's final values, float64 shaped as its dimensions, NaN
      where nothing was stored (what ``toysim run --show NAME`` prints); ``array(name)`` gives
      any array, inputs included.
    """

    def __init__(self, program, handle):
        self.program = program
        self._handle = handle
        self.json = _json.loads(handle.json)
        self.counters = _json.loads(handle.counters)
        self.arrays = self.json["counters"]["dram"]["arrays"]
        self.checks = self.json["check"]["checks"]
        self.expects = self.json["expect"]["figures"]
        self.passed = self.json["ok"]
        self.fault = handle.fault
        self.outputs = {} if self.fault else {name: handle.array(name) for name, info in self.arrays.items() if info["role"] == "output"}

    def array(self, name):
        """An array's final values (float64, shaped as its dimensions; NaN where nothing was stored)."""
        return self._handle.array(name)

    def __repr__(self):
        return f"<toysim.Result {self.program.path}: {'ok' if self.passed else 'not ok'}, {self.counters['cycles']} cycles>"


class Trace(list):
    """The event stream (``Program.trace``): a list of one dict per executed instruction, the
    ``steps`` of ``toysim trace --format json``, which is ``.json``. Also ``counters`` (by name,
    as ``Result.counters``), ``legend``, ``complete`` and ``fault``."""

    def __init__(self, data, counters):
        super().__init__(data["steps"])
        self.json = data
        self.counters = counters
        self.legend = data["legend"]
        self.complete = data["complete"]
        self.fault = data["fault"]


class Formula:
    """One cost formula: ``text`` ("n·d·Tr"), ``value`` at the program's parameters (None where it
    cannot be evaluated), ``counted`` (the exact count, where ``toysim cost`` has one), ``exact``.

    Calling it evaluates it at other parameters, the program's own kept for the rest:
    ``f(n=4096, d=64)`` is the ``value`` ``toysim cost --set n=4096 --set d=64`` prints.
    """

    def __init__(self, program, which, array, data, exact=True, note=None):
        self._program, self._which, self._array = program, which, array
        self.text = data["formula"]
        self.value = data.get("value")
        self.counted = data.get("counted")
        self.exact = exact
        self.note = note

    def __call__(self, **params):
        return self._program._p.formula(_merged(self._program._p.sets, params), self._which, self._array or "")

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"<toysim.Formula {self.text} = {self.value}>"


class Cost:
    """What ``toysim cost --format json`` says (``.json``), with its formulas as :class:`Formula`:
    ``cost["reads"][ARRAY]``, ``cost["writes"][ARRAY]``, ``cost["work"]``, ``cost["cycles"]``
    (the same as the attributes ``reads``, ``writes``, ``work`` and ``cycles``). For a program
    with a cache, ``.json`` is the count through the cache (as the CLI's JSON) and the formulas
    are those its table shows first; ``formulas_json`` is their JSON."""

    def __init__(self, program, cli_json, data):
        self.json = cli_json
        self.formulas_json = data
        self.reads, self.writes = {}, {}
        self.work = self.cycles = None
        for name, info in data.get("arrays", {}).items():
            self.reads[name] = Formula(program, "reads", name, info["reads"], info["exact"], info["note"])
            self.writes[name] = Formula(program, "writes", name, info["writes"], info["exact"], info["note"])
        time = data.get("time")
        if time:
            self.work = Formula(program, "work", None, time["work"], time["exact"], time["note"])
            self.cycles = Formula(program, "cycles", None, time["cycles"], time["exact"], time["note"])

    def __getitem__(self, key):
        if key in ("reads", "writes", "work", "cycles"):
            return getattr(self, key)
        return self.formulas_json[key]

    def __repr__(self):
        return f"<toysim.Cost reads {', '.join(f'{k}: {v.text}' for k, v in self.reads.items())}>"


class Sweep(list):
    """A sweep's rows (``Program.sweep``): one flat dict per setting; ``.json`` is ``toysim sweep --format json``."""

    def __init__(self, rows, data):
        super().__init__(rows)
        self.json = data


class Grade:
    """A graded solution (:func:`grade`): ``json`` (``toysim grade --format json``), ``gradescope``
    (``--format gradescope``, Gradescope's results.json), ``score``, ``max_score``, ``passed``
    (full marks) and ``cases`` (each test case's verdict, figures and points)."""

    def __init__(self, handle):
        self.json = _json.loads(handle.json)
        self.gradescope = _json.loads(handle.gradescope)
        self.passed = handle.full_marks
        self.score = self.json.get("score")
        self.max_score = self.json.get("max_score")
        self.cases = self.json.get("cases")

    def __repr__(self):
        return f"<toysim.Grade {self.score} of {self.max_score}>"


def grade(exercise, solution):
    """Grade a solution: ``grade(exercise, solution) -> Grade``, as ``toysim grade``.

    ``exercise``: a folder holding exercise.toy, or a name the CLI accepts (under
    $TOYSIM_EXERCISES, ./programs/exercises, or the course's own). ``solution``: a path (as
    :func:`load` tells one), or the solution's text, named ``<string>``. A bad exercise or a
    missing file raises :class:`ToyError`; a bad solution gets its verdicts.
    """
    if isinstance(solution, _os.PathLike) or (isinstance(solution, str) and _names_a_file(solution)):
        return Grade(_toysim.grade(_os.fspath(exercise), _os.fspath(solution), None))
    return Grade(_toysim.grade(_os.fspath(exercise), None, solution))


class View:
    """The viewer page ``toysim view`` writes (``html``); in Jupyter it shows inline, in an
    ``<iframe srcdoc>`` (nothing is fetched: the page holds the run and Chart.js)."""

    def __init__(self, page, height=720):
        self.html = page
        self.height = height

    def _repr_html_(self):
        return (f'<iframe srcdoc="{_html.escape(self.html, quote=True)}" style="width: 100%; height: {self.height}px; border: none" '
                'sandbox="allow-scripts"></iframe>')

    def save(self, path):
        """Write the page to ``path`` (what ``toysim view -o PATH`` writes)."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html)


class Stop:
    """Where a :class:`Session` move stopped: ``reason`` ("moved", "breakpoint", "start", "end",
    "fault"), ``breakpoint`` (its number, or None), ``step``, and ``text``: what ``toysim step``
    prints after that move."""

    def __init__(self, data):
        self.reason = data["reason"]
        self.breakpoint = data["breakpoint"]
        self.step = data["step"]
        self.text = data["text"]

    def __repr__(self):
        return f"<toysim.Stop {self.reason} at step {self.step}>"

    def __str__(self):
        return self.text


class Session:
    """Step through a run, forward and backward, as ``toysim step`` does (the same engine).

    ``Session(program, values="auto", max_steps=None)``: ``program`` is a :class:`Program`
    (or what :func:`load` takes); ``values`` "symbolic" (the trace's names), "numeric" or
    "auto" (symbolic for scalar programs of up to 100,000 steps); ``max_steps`` the run's step
    limit. It starts at step 0.

    Moves return a :class:`Stop`: ``step(n=1)``, ``back(n=1)``, ``goto(step)``, ``continue_()``
    (also ``cont()``), ``reverse_continue()``. ``step``, ``back`` and ``goto`` go exactly as far
    as asked; ``continue_`` and ``reverse_continue`` stop at breakpoints. Ctrl-C stops a long
    move (``KeyboardInterrupt``). Going back is re-execution from checkpoints, so the machine
    at any step is what a fresh run has there.

    Breakpoints, as the stepper's ``break`` and ``watch`` take them: ``break_at("43")`` (a
    line), ``break_at("cycle 100")``, ``break_at("STORE")``, ``break_at("x[3]")``,
    ``break_at("reads(K) > 64")``, ``watch("R2")``; each returns its number.
    ``delete(number=None)`` deletes one (or all); ``breakpoints`` lists them.

    State: ``position`` (the current step; 0 is the start), ``cycle``, ``end`` (the last
    step, once known), ``fault``, ``registers`` (R0 -> value), ``tiles`` (name -> array),
    ``counters`` (by name, as ``Result.counters``). Displays, as the stepper prints them:
    ``where()``, ``print(what)``, ``regs()``, ``mem(array, first_row=0)``, ``list(line=None)``,
    ``counters_text()``, ``workers()`` (``info workers``: each worker or device side by side, its
    clock, next line and state, and the messages on the links).
    """

    def __init__(self, program, values="auto", max_steps=None):
        if not isinstance(program, Program):
            program = load(program)
        if values not in ("auto", "symbolic", "numeric"):
            raise ValueError("values is 'auto', 'symbolic' or 'numeric'")
        self.program = program
        self._s = _toysim.Session(program._p, values, max_steps)

    # ---- moves ----
    def step(self, n=1):
        """Forward ``n`` instructions."""
        return Stop(self._s.move("forward", n))

    def back(self, n=1):
        """Backward ``n`` instructions."""
        return Stop(self._s.move("backward", n))

    def goto(self, step):
        """To step ``step`` (0: the start), forward or backward."""
        return Stop(self._s.move("goto", step))

    def continue_(self):
        """To the next step a breakpoint stops at, else the end."""
        return Stop(self._s.move("continue"))

    cont = continue_

    def reverse_continue(self):
        """To the previous step a breakpoint stops at, else the start."""
        return Stop(self._s.move("reverse-continue"))

    # ---- breakpoints ----
    def break_at(self, where):
        """A breakpoint, as ``break WHERE`` (a line, ``cycle N``, an opcode, ``K``, ``x[3]``, ``reads(K) > 64``, ``worker 2``)."""
        return self._s.add_breakpoint(str(where), False)

    def watch(self, what):
        """A watchpoint, as ``watch WHAT``: a write that changes a register, a tile or DRAM (``R2``, ``o``, ``out[3]``)."""
        return self._s.add_breakpoint(str(what), True)

    def delete(self, number=None):
        """Delete breakpoint ``number``, or every one."""
        self._s.delete_breakpoint(number)

    @property
    def breakpoints(self):
        """Each breakpoint: ``{"number", "text", "hits"}``."""
        return self._s.breakpoints

    # ---- state ----
    @property
    def position(self):
        """The current step: the instructions executed so far."""
        return self._s.position

    current_step = position

    @property
    def cycle(self):
        return self._s.cycle

    @property
    def end(self):
        return self._s.end

    @property
    def fault(self):
        return self._s.fault

    @property
    def values(self):
        return "symbolic" if self._s.symbolic else "numeric"

    @property
    def registers(self):
        return self._s.registers

    @property
    def tiles(self):
        return self._s.tiles

    @property
    def counters(self):
        return _json.loads(self._s.counters)

    # ---- displays ----
    def where(self):
        return self._s.where()

    def print(self, what):
        return self._s.print(what)

    def regs(self):
        return self._s.regs_text()

    def mem(self, array, first_row=0):
        return self._s.mem_text(array, first_row)

    def list(self, line=None):
        return self._s.list_text(line)

    def counters_text(self):
        return self._s.counters_text()

    def workers(self):
        return self._s.workers_text()

    def __repr__(self):
        return f"<toysim.Session {self.program.path} at step {self.position}>"
