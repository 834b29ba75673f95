"""`sacctmgr dump CLUSTER file=F` text -> AccountTree (the file `sacctmgr load` reads).

Format (sacctmgr(1), "FLAT FILE DUMP AND LOAD"): one entity per line,
`Object - 'name':Option=Value:Option='quoted:value'`.

    QOS - 'high':Priority=100:Preempt='low'       (newer dumps; optional)
    Cluster - 'c1':Fairshare=1:QOS='normal'       root association's settings
    Parent - 'root'                               following lines hang below root
    Account - 'nlp':Description='nlp':Fairshare=40:GrpTRES=gres/gpu=64
    Parent - 'nlp'
    User - 'alice':DefaultAccount='nlp':MaxJobs=10:AdminLevel='Operator'

A User line is the user's association with the current Parent account. A
Parent must already be defined (root always is). Older dumps carry no QOS
definitions; for those, paste `sacctmgr -P show qos` output (a header line
starting `Name|`, then one row per QOS) into the file or into qos.txt next
to it (see qos_table.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from tide.config.errors import Warnings
from tide.config.qos_table import parse_qos_rows
from tide.config.sacctmgr_fields import is_limit, set_limit, set_qos_option, unmodelled
from tide.config.values import Loc, split_list, to_int
from tide.model import Account, AccountTree, Qos, UserAssoc
from tide.model.account import FAIRSHARE_PARENT

FS_PARENT_DUMPED = 2147483647  # how sacctmgr dump writes Fairshare=parent
_ADMIN = {"none": "None", "operator": "Operator", "administrator": "Administrator",
          "admin": "Administrator"}
_OBJECT = re.compile(r"^\s*([A-Za-z]+)\s*-\s*(.*)$")
_SILENT = {"description", "organization", "defaultaccount", "adminlevel", "coordinator",
           "defaultwckey", "wckeys", "classification", "features", "federation", "fedstate",
           "partition", "qos", "defaultqos", "fairshare", "shares"}


def read_sacctmgr_dump(path: Path, warn: Warnings, qos: dict[str, Qos] | None = None
                       ) -> AccountTree:
    """`qos`: definitions from elsewhere (qos.txt); the dump's own lines win."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise Loc(path.name).error(f"cannot read {path}: {e.strerror or e}",
                                   "check the path and its permissions") from None
    return parse_sacctmgr_dump(text, warn, path.name, qos)


def parse_sacctmgr_dump(text: str, warn: Warnings, file: str = "sacctmgr.dump",
                        qos: dict[str, Qos] | None = None) -> AccountTree:
    reader = _Reader(file, warn)
    reader.qos.update(qos or {})
    return reader.read(text)


def split_options(rest: str, loc: Loc) -> tuple[str, list[tuple[str, str]]]:
    """"'nlp':Fairshare=40:Description='a:b'" -> ('nlp', [('Fairshare', '40'), ...])."""
    fields, cur, quote = [], [], ""
    for ch in rest:
        if quote:
            if ch == quote:
                quote = ""
            else:
                cur.append(ch)
        elif ch in "'\"":
            quote = ch
        elif ch == ":":
            fields.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if quote:
        raise loc.error("unbalanced quote", "close every quoted value, e.g. Description='x'")
    fields.append("".join(cur))
    name = fields[0].strip()
    if not name:
        raise loc.error("entity has no name", "write e.g. Account - 'nlp':Fairshare=40")
    opts: list[tuple[str, str]] = []
    for f in fields[1:]:
        if not f.strip():
            continue
        key, eq, value = f.partition("=")
        if not eq and opts:  # an unquoted time such as MaxWall=1-00:00:00
            opts[-1] = (opts[-1][0], f"{opts[-1][1]}:{f.strip()}")
            continue
        if not eq:
            raise loc.error(f"option {f!r} is not Option=Value",
                            "separate options with ':' and write each as Option=Value")
        opts.append((key.strip().rstrip("+-"), value.strip()))
    return name, opts


class _Reader:
    def __init__(self, file: str, warn: Warnings) -> None:
        self.file = file
        self.warn = warn
        self.tree: AccountTree | None = None
        self.qos: dict[str, Qos] = {}
        self.parent = "root"
        self.warned: set[str] = set()
        self.used_qos: set[str] = set()

    def read(self, text: str) -> AccountTree:
        table: list[tuple[int, str]] = []
        for lineno, line in _lines(text):
            loc = Loc(self.file, lineno)
            if table or line.lower().startswith("name|"):
                if "|" in line and not _OBJECT.match(line):
                    table.append((lineno, line))
                    continue
                self._table(table)
                table = []
            self._line(line, loc)
        self._table(table)
        return self._finish()

    def _table(self, rows: list[tuple[int, str]]) -> None:
        if rows:
            self.qos.update(parse_qos_rows(rows, self.file, self.warn))

    def _line(self, line: str, loc: Loc) -> None:
        m = _OBJECT.match(line)
        if not m:
            raise loc.error(f"cannot read {line[:40]!r}",
                            "write lines as Object - 'name':Option=Value")
        obj, rest = m.group(1).lower(), m.group(2)
        name, opts = split_options(rest, loc)
        if obj == "qos":
            self._qos(name, opts, loc)
        elif obj in ("cluster", "machine"):
            self._cluster(name, opts, loc)
        elif self.tree is None:
            raise loc.error(f"{m.group(1)} line before any Cluster line",
                            "start the file with Cluster - 'name'")
        elif obj == "parent":
            if name not in self.tree.accounts:
                raise loc.error(f"Parent {name!r} is not defined above",
                                f"add Account - '{name}' before Parent - '{name}'")
            self.parent = name
        elif obj in ("account", "project"):
            self._account(name, opts, loc)
        elif obj == "user":
            self._user(name, opts, loc)
        else:
            raise loc.error(f"unknown object {m.group(1)!r}",
                            "use QOS, Cluster, Parent, Account or User")

    def _qos(self, name: str, opts: list[tuple[str, str]], loc: Loc) -> None:
        qos = self.qos.setdefault(name, Qos(name))
        for key, value in opts:
            set_qos_option(qos, key, value, loc, self.warn, self.warned)

    def _cluster(self, name: str, opts: list[tuple[str, str]], loc: Loc) -> None:
        if self.tree is not None:
            raise loc.error(f"second Cluster line ({name})",
                            "dump one cluster per file, as sacctmgr load requires")
        self.tree = AccountTree(cluster=name)
        self._assoc(opts, loc, self.tree.accounts["root"])

    def _account(self, name: str, opts: list[tuple[str, str]], loc: Loc) -> None:
        assert self.tree is not None
        if name in self.tree.accounts:
            raise loc.error(f"account {name!r} is defined twice",
                            "keep one Account line per account")
        acct = Account(name, parent=self.parent)
        self._assoc(opts, loc, acct)
        for key, value in opts:
            if key.lower() == "description":
                acct.description = value
            elif key.lower() == "organization":
                acct.organization = value
        self.tree.accounts[name] = acct

    def _user(self, name: str, opts: list[tuple[str, str]], loc: Loc) -> None:
        assert self.tree is not None
        lower = {k.lower(): v for k, v in opts}
        if self.tree.assoc(name, self.parent) is not None:
            what = " (partition associations are not modelled)" if "partition" in lower else ""
            self.warn.add(loc.file, loc.line,
                          f"user {name} already has an association with {self.parent}; "
                          f"line ignored{what}")
            return
        if "partition" in lower:
            self.warn.add(loc.file, loc.line, f"user {name}: Partition= association kept as "
                          f"the {self.parent} association (partitions are not modelled)")
        user = UserAssoc(name, self.parent)
        self._assoc(opts, loc, user)
        user.default_account = lower.get("defaultaccount") == self.parent
        level = lower.get("adminlevel", "None")
        if level.lower() not in _ADMIN:
            raise loc.error(f"AdminLevel={level!r} is not valid",
                            "write AdminLevel='None', 'Operator' or 'Administrator'")
        user.admin_level = _ADMIN[level.lower()]
        self.tree.users.append(user)

    def _qos_list(self, value: str) -> tuple[str, ...]:
        """QOS='high,low', or changes to the inherited list as dumps write them
        for `sacctmgr modify user X set qos+=high`: QOS='+high,-low' (the root's
        list, plus and minus these)."""
        items = split_list(value)
        if not any(q[:1] in "+-" for q in items if q):
            return tuple(items)
        out = list(self.tree.accounts["root"].qos) if self.tree is not None else []
        for q in items:
            name = q.lstrip("+-")
            if q.startswith("-"):
                out = [x for x in out if x != name]
            elif name and name not in out:
                out.append(name)
        return tuple(out)

    def _assoc(self, opts: list[tuple[str, str]], loc: Loc, assoc: Account | UserAssoc) -> None:
        """The association options shared by Cluster (root), Account and User lines."""
        for key, value in opts:
            k = key.lower()
            if k in ("fairshare", "shares"):
                assoc.fairshare = _fairshare(key, value, loc)
            elif k == "priority":
                assoc.priority = None if value in ("", "-1") else to_int(key, value, loc)
            elif k == "qos":
                assoc.qos = self._qos_list(value)
                self.used_qos.update(assoc.qos)
            elif k == "defaultqos":
                assoc.default_qos = value
                self.used_qos.add(value)
            elif is_limit(k):
                set_limit(assoc.limits, key, value, loc)
            elif k not in _SILENT:
                unmodelled(key, loc, self.warn, self.warned, "association")

    def _finish(self) -> AccountTree:
        if self.tree is None:
            raise Loc(self.file).error("no Cluster line",
                                       "start the dump with Cluster - 'name'")
        self.tree.qos.update(self.qos)
        used = self.used_qos | {p for q in self.qos.values() for p in q.preempt}
        missing = sorted(q for q in used if q and q not in self.tree.qos)
        for q in missing:
            self.tree.qos[q] = Qos(q)
        if missing:
            self.warn.add(self.file, None,
                          f"QOS {', '.join(missing)} used but not defined; using default "
                          "settings (add QOS lines or a `sacctmgr -P show qos` table)")
        return self.tree


def _fairshare(key: str, value: str, loc: Loc) -> int:
    if value.lower() == "parent" or value == str(FS_PARENT_DUMPED):
        return FAIRSHARE_PARENT
    return to_int(key, value, loc)


def _lines(text: str) -> list[tuple[int, str]]:
    out, buf, start = [], "", 0
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not buf:
            start = n
        if not buf and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            buf += line[:-1]
            continue
        out.append((start, buf + line))
        buf = ""
    if buf:
        out.append((start, buf))
    return out
