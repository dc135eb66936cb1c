"""Plays a GitHub Actions workflow on this machine as a runner would (selftests only).

Each job's ``run:`` steps run in order in bash, with the workflow's, the job's and the step's
``env``, ``working-directory``, ``$GITHUB_WORKSPACE``, ``$GITHUB_OUTPUT`` and ``$GITHUB_ENV``;
``${{ }}`` expressions are evaluated by a small evaluator that knows only the contexts and functions
the workflow uses and raises on anything else (GitHub turns an unknown name into '', which would
hide a typo). The ``uses:`` steps are mapped to what they do here: ``actions/checkout`` clones a
local repository (``repos`` maps each ``repository:`` to one), ``upload-artifact`` and
``download-artifact`` copy through a directory, ``actions/cache`` is the machine's own cache
(``$MXNET_HARNESS_CACHE``, ``~/.cache``). A job runs on the runner ``runner_for`` names for its
``runs-on`` labels; a runner marked persistent keeps its workspace between jobs (a self-hosted
runner), any other starts empty. Nothing here knows the harness: what a test changes (a step this
machine cannot run, a selection narrowed to it) it passes as ``Substitution``s, each of which must
match exactly one step, so a workflow that drifted fails the test instead of silently playing less.
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


class WorkflowError(Exception):
    """The workflow uses something this player does not know (a context, function, action or key)."""


# ---- expressions -------------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)(?![\w.])"
                    r"|(?P<op>==|!=|&&|\|\||!|\(|\)|,)"
                    r"|(?P<name>[A-Za-z_][\w-]*(?:\.[A-Za-z_][\w-]*)*))")


def _tokens(text: str) -> list:
    out, pos, text = [], 0, text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise WorkflowError(f"expression {text!r}: cannot read {text[pos:]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


class Expr:
    """``${{ }}`` expressions: context paths (``matrix.arch``, ``needs.build.outputs.wheel``),
    string/number/boolean literals, ``== != && || !``, parentheses and the status functions."""

    FUNCTIONS = ("always", "success", "failure", "cancelled")

    def __init__(self, contexts: dict, status: Callable[[str], bool]):
        self.contexts = contexts
        self.status = status

    def evaluate(self, text: str):
        self.toks, self.i, self.text = _tokens(text), 0, text
        value = self._or()
        if self.i != len(self.toks):
            raise WorkflowError(f"expression {text!r}: unexpected {self.toks[self.i][1]!r}")
        return value

    def interpolate(self, value):
        """A string with its ``${{ }}`` parts evaluated (other types as they are)."""
        if not isinstance(value, str):
            return value
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: _text(self.evaluate(m.group(1))), value, flags=re.S)

    def _peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def _take(self, want=None):
        tok = self._peek()
        if tok[0] is None or (want is not None and tok[1] != want):
            raise WorkflowError(f"expression {self.text!r}: expected {want or 'a value'}")
        self.i += 1
        return tok

    def _or(self):
        left = self._and()
        while self._peek()[1] == "||":
            self._take()
            right = self._and()
            left = left if _truthy(left) else right
        return left

    def _and(self):
        left = self._cmp()
        while self._peek()[1] == "&&":
            self._take()
            right = self._cmp()
            left = right if _truthy(left) else left
        return left

    def _cmp(self):
        left = self._not()
        while self._peek()[1] in ("==", "!="):
            op = self._take()[1]
            right = self._not()
            same = _fold(left) == _fold(right)
            left = same if op == "==" else not same
        return left

    def _not(self):
        if self._peek()[1] == "!":
            self._take()
            return not _truthy(self._not())
        return self._primary()

    def _primary(self):
        kind, text = self._take()
        if text == "(" and kind == "op":
            value = self._or()
            self._take(")")
            return value
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if kind != "name":
            raise WorkflowError(f"expression {self.text!r}: unexpected {text!r}")
        if self._peek()[1] == "(":
            self._take("(")
            self._take(")")
            if text not in self.FUNCTIONS:
                raise WorkflowError(f"expression {self.text!r}: function {text}() is not known here")
            return self.status(text)
        if text in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[text]
        return self._lookup(text)

    def _lookup(self, path: str):
        parts = path.split(".")
        if parts[0] not in self.contexts:
            raise WorkflowError(f"expression {self.text!r}: context {parts[0]!r} is not known here")
        value = self.contexts[parts[0]]
        for k, part in enumerate(parts[1:], 1):
            if not isinstance(value, dict) or part not in value:
                raise WorkflowError(f"expression {self.text!r}: {'.'.join(parts[:k + 1])} is not defined")
            value = value[part]
        return value


def _truthy(v) -> bool:
    return bool(v) and v != 0


def _fold(v):
    return v.lower() if isinstance(v, str) else v


def _text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


# ---- the runner --------------------------------------------------------------------------------

@dataclass
class Runner:
    name: str
    persistent: bool = False   # a self-hosted runner: its workspace stays between jobs


@dataclass
class Substitution:
    """A change to one step this machine needs, said out loud: in job ``job``, the step whose
    ``run:`` contains ``old`` gets ``new`` in its place, or is replaced by ``call(ctx)``
    (returning an exit status). ``why`` is printed in the play's log."""
    job: str
    old: str
    why: str
    new: str | None = None
    call: Callable | None = None
    #: run before the step (its exit status must be 0), e.g. to lay down what a host of another
    #: kind would have made; the step itself then runs as written (or with ``new``)
    before: Callable | None = None
    used: int = 0


@dataclass
class StepResult:
    job: str
    name: str
    rc: int | None            # None: skipped by its if:
    output: str = ""
    seconds: float = 0.0


@dataclass
class JobResult:
    job: str
    instance: str
    result: str               # success / failure / skipped
    steps: list = field(default_factory=list)
    outputs: dict = field(default_factory=dict)
    note: str = ""

    def step(self, name_part: str) -> StepResult:
        found = [s for s in self.steps if name_part in s.name]
        if len(found) != 1:
            raise KeyError(f"{self.instance}: {len(found)} steps named like {name_part!r}: "
                           f"{[s.name for s in self.steps]}")
        return found[0]


class Player:
    def __init__(self, workflow: dict, root: Path, *, repos: dict, runner_for: Callable,
                 github: dict, inputs: dict, substitutions=(), env=None, step_timeout: float = 900,
                 play_regardless=()):
        self.wf = workflow
        self.root = Path(root)
        self.repos = repos
        self.runner_for = runner_for
        self.github = github
        self.inputs = inputs
        self.subs = list(substitutions)
        self.base_env = dict(os.environ if env is None else env)
        self.step_timeout = step_timeout
        #: jobs played even when GitHub would skip them (their needs failed), to prove their steps
        self.play_regardless = set(play_regardless)
        self.artifacts = self.root / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.results: dict = {}      # job -> list[JobResult]
        self.log: list = []

    # -- the workflow ---------------------------------------------------------------------------
    def order(self) -> list:
        jobs = self.wf["jobs"]
        done, out = set(), []
        while len(out) < len(jobs):
            ready = [j for j in jobs if j not in done and set(_list(jobs[j].get("needs"))) <= done]
            if not ready:
                raise WorkflowError(f"jobs {sorted(set(jobs) - done)}: their needs form a cycle or name no job")
            out.append(ready[0])
            done.add(ready[0])
        return out

    def play(self) -> dict:
        for job in self.order():
            self.results[job] = self.play_job(job)
        unused = [s for s in self.subs if s.used != 1]
        if unused:
            raise WorkflowError("substitutions that did not match exactly one step: "
                                + "; ".join(f"{s.job}: {s.old!r} matched {s.used}" for s in unused)
                                + "\nthe play:\n" + "\n".join(self.log) + "\n" + self.failures())
        return self.results

    def failures(self) -> str:
        """The output of every step that failed, and why each job that did not run did not."""
        out = []
        for job, results in self.results.items():
            for r in results:
                if r.note:
                    out.append(f"--- {r.instance}: {r.result}, {r.note}")
                out += [f"--- {r.instance}: {s.name} exit {s.rc}\n{s.output[-3000:]}" for s in r.steps if s.rc]
        return "\n".join(out)

    def job_result(self, job: str) -> str:
        rs = [r.result for r in self.results[job]]
        if all(r == "skipped" for r in rs):
            return "skipped"
        return "success" if all(r == "success" for r in rs) else "failure"

    def _needs_context(self, spec: dict) -> dict:
        out = {}
        for n in _list(spec.get("needs")):
            outputs = {}
            for r in self.results[n]:
                outputs.update(r.outputs)
            out[n] = {"result": self.job_result(n), "outputs": outputs}
        return out

    def play_job(self, job: str) -> list:
        spec = self.wf["jobs"][job]
        unknown = set(spec) - {"name", "needs", "if", "runs-on", "permissions", "timeout-minutes", "outputs",
                               "steps", "strategy", "env", "environment", "defaults"}
        if unknown:
            raise WorkflowError(f"job {job}: keys {sorted(unknown)} are not known here")
        needs = self._needs_context(spec)
        matrix = (spec.get("strategy") or {}).get("matrix") or {}
        if any(k in ("include", "exclude") for k in matrix):
            raise WorkflowError(f"job {job}: matrix include/exclude is not known here")
        combos = [dict(zip(matrix, values)) for values in itertools.product(*(matrix[k] for k in matrix))] or [{}]
        return [self._play_instance(job, spec, needs, combo) for combo in combos]

    def _contexts(self, needs, combo, env, steps) -> dict:
        return {"github": self.github, "inputs": self.inputs, "needs": needs, "matrix": combo,
                "env": env, "steps": steps}

    def _play_instance(self, job, spec, needs, combo) -> JobResult:
        instance = job + (f" ({', '.join(map(str, combo.values()))})" if combo else "")
        all_needs_ok = all(n["result"] == "success" for n in needs.values())
        status_fns = {"always": True, "success": all_needs_ok, "failure": not all_needs_ok, "cancelled": False}
        ctx = self._contexts(needs, combo, {}, {})
        run_it = _truthy(Expr(ctx, status_fns.__getitem__).evaluate(_cond(spec.get("if", "success()"))))
        forced = ""
        if not run_it:
            if job not in self.play_regardless:
                return JobResult(job, instance, "skipped", note="its if: is false")
            forced = "GitHub would skip it (its needs did not all succeed); played to prove its steps"
        labels = _list(Expr(ctx, status_fns.__getitem__).interpolate(spec["runs-on"]))
        labels = [Expr(ctx, status_fns.__getitem__).interpolate(lbl) for lbl in labels]
        runner = self.runner_for(job, labels)
        if runner is None:
            return JobResult(job, instance, "failure", note=f"no runner here has the labels {labels}")
        ws = self.root / "runners" / runner.name / "work"
        if not runner.persistent and ws.exists():
            shutil.rmtree(ws)
        ws.mkdir(parents=True, exist_ok=True)
        temp = self.root / "runners" / runner.name / "temp"
        shutil.rmtree(temp, ignore_errors=True)
        temp.mkdir(parents=True)
        github = {**self.github, "workspace": str(ws)}
        env: dict = {}
        ctx = {**self._contexts(needs, combo, env, {}), "github": github}
        for scope in (self.wf.get("env") or {}, spec.get("env") or {}):
            for k, v in scope.items():
                env[k] = _text(Expr(ctx, status_fns.__getitem__).interpolate(v))
        steps_ctx: dict = {}
        ctx["steps"] = steps_ctx
        result = JobResult(job, instance, "success", note=forced)
        failed = False
        defaults = ((spec.get("defaults") or {}).get("run") or {})
        for n, step in enumerate(spec.get("steps") or ()):
            name = step.get("name") or step.get("uses") or (step.get("run") or "").split("\n")[0]
            step_status = {"always": True, "success": not failed, "failure": failed, "cancelled": False}
            expr = Expr(ctx, step_status.__getitem__)
            if not _truthy(expr.evaluate(_cond(step.get("if", "success()")))):
                result.steps.append(StepResult(job, name, None))
                self.log.append(f"[{instance}] {name}: skipped (its if:)")
                continue
            step_env = {**env}
            for k, v in (step.get("env") or {}).items():
                step_env[k] = _text(expr.interpolate(v))
            t0 = time.monotonic()
            if "uses" in step:
                rc, out = self._uses(step, expr, ws)
            else:
                rc, out, new_env, outputs = self._run(job, step, expr, ws, temp, step_env, defaults, n, runner)
                env.update(new_env)
                if step.get("id"):
                    steps_ctx[step["id"]] = {"outputs": outputs, "outcome": "success" if rc == 0 else "failure"}
            result.steps.append(StepResult(job, name, rc, out, time.monotonic() - t0))
            self.log.append(f"[{instance}] {name}: exit {rc} ({time.monotonic() - t0:.1f} s)")
            if rc != 0 and not step.get("continue-on-error"):
                failed = True
        result.result = "failure" if failed else "success"
        if not failed:
            for k, v in (spec.get("outputs") or {}).items():
                result.outputs[k] = _text(Expr(ctx, step_status.__getitem__).interpolate(v))
        return result

    # -- run: steps -----------------------------------------------------------------------------
    def _run(self, job, step, expr, ws, temp, env, defaults, n, runner):
        script = step["run"]
        for sub in self.subs:
            if sub.job == job and sub.old in script:
                sub.used += 1
                self.log.append(f"[{job}] substituted {sub.old!r}: {sub.why}")
                if sub.before is not None:
                    rc = sub.before({"workspace": ws, "env": env})
                    if rc != 0:
                        return rc, f"(before the step, for: {sub.why}: exit {rc})", {}, {}
                if sub.call is not None:
                    out_file = temp / f"output-{n}"
                    rc = sub.call({"workspace": ws, "env": env, "github_output": out_file})
                    return rc, f"(substituted: {sub.why})", {}, _read_kv(out_file)
                if sub.new is not None:
                    script = script.replace(sub.old, sub.new)
        script = expr.interpolate(script)
        if step.get("shell", defaults.get("shell", "bash")) != "bash":
            raise WorkflowError(f"job {job}: only bash steps are played")
        wd = step.get("working-directory", defaults.get("working-directory"))
        cwd = ws / expr.interpolate(wd) if wd else ws
        if not cwd.is_dir():
            return 2, f"working-directory {cwd} does not exist", {}, {}
        out_file, env_file = temp / f"output-{n}", temp / f"env-{n}"
        out_file.write_text("")
        env_file.write_text("")
        script_file = temp / f"step-{n}.sh"
        script_file.write_text(script)
        full_env = {**self.base_env, **env, "GITHUB_WORKSPACE": str(ws), "GITHUB_OUTPUT": str(out_file),
                    "GITHUB_ENV": str(env_file), "RUNNER_TEMP": str(temp), "CI": "true",
                    "GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": self.github["repository"],
                    "GITHUB_JOB": job, "RUNNER_NAME": runner.name}
        try:
            # one stream, interleaved as a CI log shows it
            proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
                                  cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=self.step_timeout)
            rc, out = proc.returncode, proc.stdout
        except subprocess.TimeoutExpired as exc:
            rc, out = 124, f"timed out after {self.step_timeout} s: {exc.stdout or ''}"
        return rc, out, _read_kv(env_file), _read_kv(out_file)

    # -- uses: steps ----------------------------------------------------------------------------
    def _uses(self, step, expr, ws):
        action = step["uses"].split("@", 1)[0]
        w = {k: expr.interpolate(v) for k, v in (step.get("with") or {}).items()} if action != "actions/cache" else {}
        handler = {"actions/checkout": self._checkout, "actions/upload-artifact": self._upload,
                   "actions/download-artifact": self._download, "actions/cache": lambda w, ws: (0, "the machine's own cache")}
        if action not in handler:
            raise WorkflowError(f"action {action} is not known here")
        return handler[action](w, ws)

    def _checkout(self, w, ws):
        known = {"repository", "ref", "path", "submodules", "fetch-depth", "clean", "persist-credentials"}
        if set(w) - known:
            raise WorkflowError(f"actions/checkout: {sorted(set(w) - known)} are not known here")
        repo = w.get("repository") or self.github["repository"]
        if repo not in self.repos:
            return 1, f"repository {repo!r}: not found (this play knows {sorted(self.repos)})"
        dest = ws / w.get("path", ".")
        ref = w.get("ref") or ""
        git = lambda *a: subprocess.run(["git", "-C", str(dest), *a], capture_output=True, text=True)  # noqa: E731
        if not (dest / ".git").exists():
            if dest.exists() and any(dest.iterdir()):
                shutil.rmtree(dest)
            proc = subprocess.run(["git", "clone", "-q", str(self.repos[repo]), str(dest)], capture_output=True, text=True)
            if proc.returncode:
                return proc.returncode, proc.stderr
        else:
            git("fetch", "-q", "--tags", "origin")
        if ref:
            branch = git("rev-parse", "--verify", "-q", f"origin/{ref}").returncode == 0
            proc = git("checkout", "-q", "-f", "-B", ref, f"origin/{ref}") if branch else git("checkout", "-q", "-f", ref)
            if proc.returncode:
                return proc.returncode, proc.stderr
        if str(w.get("clean", "true")).lower() != "false":
            git("clean", "-q", "-ffdx")
        if str(w.get("submodules", "false")).lower() in ("true", "recursive"):
            proc = git("submodule", "update", "-q", "--init", "--recursive")
            if proc.returncode:
                return proc.returncode, proc.stderr
        return 0, f"{repo}@{git('rev-parse', 'HEAD').stdout.strip()} in {dest}"

    def _upload(self, w, ws):
        known = {"name", "path", "if-no-files-found"}
        if set(w) - known:
            raise WorkflowError(f"actions/upload-artifact: {sorted(set(w) - known)} are not known here")
        paths = [ws / p.strip() for p in w["path"].splitlines() if p.strip()]
        found = [p for p in paths if p.exists()]
        dest = self.artifacts / w.get("name", "artifact")
        if not found:
            mode = w.get("if-no-files-found", "warn")
            return (1 if mode == "error" else 0), f"no files found for {w['path']!r} ({mode})"
        files = [p for p in found if p.is_file()]
        if len({p.parent for p in files}) > 1:
            raise WorkflowError("upload-artifact: files of several directories are not modelled here")
        dest.mkdir(parents=True, exist_ok=True)
        for p in found:
            if p.is_dir():
                shutil.copytree(p, dest, dirs_exist_ok=True)
            else:
                shutil.copy2(p, dest / p.name)
        return 0, f"uploaded {len(found)} paths as {dest.name}"

    def _download(self, w, ws):
        known = {"name", "pattern", "path", "merge-multiple"}
        if set(w) - known:
            raise WorkflowError(f"actions/download-artifact: {sorted(set(w) - known)} are not known here")
        target = ws / w.get("path", ".")
        if "name" in w:
            src = self.artifacts / w["name"]
            if not src.is_dir():
                return 1, f"artifact {w['name']!r} not found"
            shutil.copytree(src, target, dirs_exist_ok=True)
            return 0, f"downloaded {w['name']}"
        import fnmatch
        names = sorted(p.name for p in self.artifacts.iterdir() if fnmatch.fnmatch(p.name, w.get("pattern", "*")))
        merge = str(w.get("merge-multiple", "false")).lower() == "true"
        for name in names:
            shutil.copytree(self.artifacts / name, target if merge else target / name, dirs_exist_ok=True)
        target.mkdir(parents=True, exist_ok=True)
        return 0, f"downloaded {names}"


def _cond(text) -> str:
    """An ``if:`` as an expression (it may be written with or without ``${{ }}``)."""
    text = str(text).strip()
    m = re.fullmatch(r"\$\{\{(.*)\}\}", text, re.S)
    return m.group(1) if m else text


def _list(v) -> list:
    if v is None:
        return []
    return list(v) if isinstance(v, (list, tuple)) else [v]


def _read_kv(path: Path) -> dict:
    """``$GITHUB_OUTPUT``/``$GITHUB_ENV``: ``name=value`` lines and ``name<<DELIM`` blocks."""
    if not Path(path).exists():
        return {}
    out, lines, i = {}, Path(path).read_text().splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            body = []
            i += 1
            while i < len(lines) and lines[i] != delim:
                body.append(lines[i])
                i += 1
            out[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out
