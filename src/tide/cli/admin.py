"""`tide admin ...`: accounts, users, associations, QOS, limits, tokens, prices
and reservations (sacctmgr / scontrol create reservation). Limits are written
the sacctmgr way: GrpTRES=gres/gpu=16 MaxJobs=10 MaxWall=2-00:00:00 (-1 clears).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any

import typer

from tide.client.cli_support import JsonOpt, api, csv_list, fail
from tide.display import duration, parse_time, print_json, table, timestamp

admin_app = typer.Typer(
    help="Administration: accounts, users, QOS, limits, tokens, prices, reservations.",
    no_args_is_help=True,
)
account_app = typer.Typer(help="Accounts (sacctmgr account).", no_args_is_help=True)
user_app = typer.Typer(help="Users and their admin level (sacctmgr user).", no_args_is_help=True)
assoc_app = typer.Typer(
    help="A user's association with an account, its shares and limits.", no_args_is_help=True
)
qos_app = typer.Typer(help="Quality of service levels (sacctmgr qos).", no_args_is_help=True)
token_app = typer.Typer(help="API tokens (secrets are shown once).", no_args_is_help=True)
price_app = typer.Typer(
    help="Price of a GPU-hour per GPU type (for reports).", no_args_is_help=True
)
resv_app = typer.Typer(help="Advance reservations.", no_args_is_help=True)
for _name, _app in (
    ("account", account_app),
    ("user", user_app),
    ("assoc", assoc_app),
    ("qos", qos_app),
    ("token", token_app),
    ("price", price_app),
    ("reservation", resv_app),
):
    admin_app.add_typer(_app, name=_name)

LimitArgs = Annotated[
    list[str] | None,
    typer.Argument(
        help="limits, sacctmgr style: GrpTRES=gres/gpu=16 MaxJobs=10 MaxWall=1-00:00:00"
    ),
]


def apply_limits(current: dict[str, Any], words: list[str] | None) -> dict[str, Any]:
    """Apply KEY=VALUE limit words to a limits dict (the API's JSON form)."""
    if not words:
        return current
    from tide.config.errors import ConfigError
    from tide.config.sacctmgr_fields import is_limit, set_limit
    from tide.config.values import Loc
    from tide.store.codec import limits_from_dict, limits_to_dict

    limits = limits_from_dict(dict(current))
    for w in words:
        key, sep, value = w.partition("=")
        if not sep or not is_limit(key):
            fail(
                f"{w!r} is not a limit",
                "use e.g. GrpTRES=gres/gpu=16, MaxJobs=10, "
                "MaxSubmitJobs=100, MaxWall=2-00:00:00, MaxTRESPerUser=gres/gpu=8",
            )
        try:
            set_limit(limits, key, value, Loc("command line"))
        except ConfigError as e:
            fail(str(e))
    return limits_to_dict(limits)


# --- accounts -------------------------------------------------------------------------


@account_app.command("list")
def account_list(as_json: JsonOpt = False) -> None:
    """List accounts with parent, shares and limits.

    Example: tide admin account list
    """
    with api() as c:
        accts = c.get("/v1/accounts")["accounts"]
    if as_json:
        print_json(accts)
        return
    table(
        ["Account", "Parent", "Share", "QOS", "Limits", "Descr"],
        [
            [
                a["name"],
                a["parent"] or "",
                a["fairshare"],
                ",".join(a["qos"]),
                _limits_text(a["limits"]),
                a["description"],
            ]
            for a in accts
        ],
    )


def _limits_text(limits: dict[str, Any]) -> str:
    parts = []
    for k, v in limits.items():
        if isinstance(v, dict):
            v = ",".join(f"{t}={n}" for t, n in v.items())
        parts.append(f"{k}={v}")
    return " ".join(parts)


@account_app.command("add")
def account_add(
    name: str,
    limits: LimitArgs = None,
    parent: Annotated[str, typer.Option(help="parent account")] = "root",
    fairshare: Annotated[int, typer.Option(help="raw shares")] = 1,
    description: Annotated[str, typer.Option()] = "",
    organization: Annotated[str, typer.Option()] = "",
    qos: Annotated[str, typer.Option(help="allowed QOS, comma list")] = "",
    default_qos: Annotated[str, typer.Option()] = "",
) -> None:
    """Create an account.

    Example: tide admin account add physics --parent root --fairshare 40 GrpTRES=gres/gpu=64
    """
    body = {
        "name": name,
        "parent": parent,
        "fairshare": fairshare,
        "description": description,
        "organization": organization,
        "qos": csv_list([qos]),
        "default_qos": default_qos,
        "limits": apply_limits({}, limits),
    }
    with api() as c:
        c.post("/v1/accounts", body)
    print(f"account {name} added")


@account_app.command("modify")
def account_modify(
    name: str,
    limits: LimitArgs = None,
    parent: Annotated[str | None, typer.Option()] = None,
    fairshare: Annotated[int | None, typer.Option()] = None,
    description: Annotated[str | None, typer.Option()] = None,
    qos: Annotated[str | None, typer.Option(help="allowed QOS, comma list")] = None,
    default_qos: Annotated[str | None, typer.Option()] = None,
) -> None:
    """Change an account's parent, shares, QOS or limits (others are kept).

    Example: tide admin account modify physics --fairshare 60 MaxJobs=-1 GrpTRES=gres/gpu=128
    """
    with api() as c:
        accts = {a["name"]: a for a in c.get("/v1/accounts")["accounts"]}
        if name not in accts:
            fail(f"account {name!r} not found", "list them with `tide admin account list`")
        a = accts[name]
        body = {
            "name": name,
            "parent": parent if parent is not None else (a["parent"] or ""),
            "fairshare": fairshare if fairshare is not None else a["fairshare"],
            "description": description if description is not None else a["description"],
            "organization": a["organization"],
            "qos": csv_list([qos]) if qos is not None else a["qos"],
            "default_qos": default_qos if default_qos is not None else a["default_qos"],
            "limits": apply_limits(a["limits"], limits),
        }
        c.put(f"/v1/accounts/{name}", body)
    print(f"account {name} modified")


@account_app.command("delete")
def account_delete(name: str) -> None:
    """Delete an account (it must have no sub-accounts and no active jobs).

    Example: tide admin account delete physics
    """
    with api() as c:
        c.delete(f"/v1/accounts/{name}")
    print(f"account {name} deleted")


# --- users and associations -----------------------------------------------------------


@user_app.command("list")
def user_list(as_json: JsonOpt = False) -> None:
    """List users, their admin level, default account and accounts.

    Example: tide admin user list
    """
    with api() as c:
        users = c.get("/v1/users")["users"]
    if as_json:
        print_json(users)
        return
    table(
        ["User", "AdminLevel", "Role", "DefAccount", "Accounts"],
        [
            [
                u["name"],
                u["admin_level"],
                u["role"],
                u["default_account"],
                ",".join(a["account"] for a in u["associations"]),
            ]
            for u in users
        ],
    )


@user_app.command("add")
def user_add(
    name: str,
    account: Annotated[str, typer.Option(help="account(s) to join, comma list")] = "",
    admin_level: Annotated[str, typer.Option(help="None, Operator or Administrator")] = "None",
    default_account: Annotated[str, typer.Option()] = "",
) -> None:
    """Create a user (or change one): accounts, admin level, default account.

    Example: tide admin user add alice --account physics --admin-level Operator
    """
    body = {
        "name": name,
        "accounts": csv_list([account]),
        "admin_level": admin_level,
        "default_account": default_account,
    }
    with api() as c:
        u = c.post("/v1/users", body)
    print(
        f"user {name}: {u['admin_level']}, accounts "
        f"{','.join(a['account'] for a in u['associations']) or '-'}"
    )


@user_app.command("delete")
def user_delete(name: str) -> None:
    """Delete a user, its associations, and revoke its tokens.

    Example: tide admin user delete alice
    """
    with api() as c:
        c.delete(f"/v1/users/{name}")
    print(f"user {name} deleted")


@assoc_app.command("set")
def assoc_set(
    user: str,
    account: str,
    limits: LimitArgs = None,
    fairshare: Annotated[int | None, typer.Option()] = None,
    qos: Annotated[str | None, typer.Option(help="allowed QOS, comma list")] = None,
    default_qos: Annotated[str | None, typer.Option()] = None,
    default: Annotated[bool, typer.Option("--default", help="make it the default account")] = False,
) -> None:
    """Create or change the association USER/ACCOUNT: shares, QOS, limits.

    Example: tide admin assoc set alice physics --fairshare 2 MaxJobs=4 MaxTRES=gres/gpu=16
    """
    with api() as c:
        users = {u["name"]: u for u in c.get("/v1/users")["users"]}
        cur: dict[str, Any] = {}
        for a in users.get(user, {}).get("associations", []):
            if a["account"] == account:
                cur = a
        body = {
            "user": user,
            "account": account,
            "fairshare": fairshare if fairshare is not None else cur.get("fairshare", 1),
            "qos": csv_list([qos]) if qos is not None else list(cur.get("qos", [])),
            "default_qos": default_qos if default_qos is not None else cur.get("default_qos", ""),
            "limits": apply_limits(cur.get("limits", {}), limits),
            "default_account": default,
        }
        c.post("/v1/associations", body)
    print(f"association {user}/{account} set")


@assoc_app.command("delete")
def assoc_delete(user: str, account: str) -> None:
    """Remove USER from ACCOUNT.

    Example: tide admin assoc delete alice physics
    """
    with api() as c:
        c.delete(f"/v1/associations/{user}/{account}")
    print(f"association {user}/{account} deleted")


# --- QOS ------------------------------------------------------------------------------------


@qos_app.command("list")
def qos_list(as_json: JsonOpt = False) -> None:
    """List QOS with priority, usage factor, preemption and limits.

    Example: tide admin qos list
    """
    with api() as c:
        qs = c.get("/v1/qos")["qos"]
    if as_json:
        print_json(qs)
        return
    table(
        ["Name", "Priority", "UsageFactor", "Preempt", "PreemptMode", "GraceTime",
         "PreemptExemptTime", "Limits"],
        [
            [
                q["name"],
                q["priority"],
                q["usage_factor"],
                ",".join(q["preempt"]),
                q.get("preempt_mode") or "cluster",
                q.get("grace_time") or 0,
                "-" if q.get("preempt_exempt_time") is None else q["preempt_exempt_time"],
                _limits_text(q["limits"]),
            ]
            for q in qs
        ],
    )  # fmt: skip


@qos_app.command("add")
def qos_add(
    name: str,
    limits: LimitArgs = None,
    priority: Annotated[int, typer.Option()] = 0,
    usage_factor: Annotated[float, typer.Option()] = 1.0,
    preempt: Annotated[str, typer.Option(help="QOS this one may preempt, comma list")] = "",
    preempt_mode: Annotated[
        str, typer.Option(help="how its jobs are preempted: REQUEUE, CANCEL, SUSPEND, OFF")
    ] = "",
    grace_time: Annotated[int, typer.Option(help="seconds from the signal to the kill")] = 0,
    preempt_exempt_time: Annotated[
        int | None, typer.Option(help="seconds a job runs before it may be preempted")
    ] = None,
    flags: Annotated[str, typer.Option()] = "",
) -> None:
    """Create or replace a QOS.

    Example: tide admin qos add high --priority 1000 --preempt low MaxTRESPerUser=gres/gpu=32
    """
    body = {
        "name": name,
        "priority": priority,
        "usage_factor": usage_factor,
        "preempt": csv_list([preempt]),
        "preempt_mode": preempt_mode.upper(),
        "grace_time": grace_time,
        "preempt_exempt_time": preempt_exempt_time,
        "flags": csv_list([flags]),
        "limits": apply_limits({}, limits),
    }
    with api() as c:
        c.post("/v1/qos", body)
    print(f"qos {name} set")


@qos_app.command("delete")
def qos_delete(name: str) -> None:
    """Delete a QOS.

    Example: tide admin qos delete high
    """
    with api() as c:
        c.delete(f"/v1/qos/{name}")
    print(f"qos {name} deleted")


# --- tokens -----------------------------------------------------------------------------------


@token_app.command("create")
def token_create(
    user: str,
    name: Annotated[str, typer.Option(help="a label, e.g. laptop")] = "",
    expires_in: Annotated[int | None, typer.Option(help="seconds")] = None,
    save: Annotated[Path | None, typer.Option(help="write it to this file (mode 0600)")] = None,
) -> None:
    """Create a token for USER and print it (once). The user sets TIDE_TOKEN to it.

    Example: tide admin token create alice --name laptop --save /home/alice/.tide/token
    """
    with api() as c:
        t = c.post("/v1/tokens", {"user": user, "name": name, "expires_in": expires_in})
    if save is not None:
        save.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(save, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(t["token"] + "\n")
        print(f"token {t['id']} for {user} written to {save}")
    else:
        print(t["token"])


@token_app.command("list")
def token_list(as_json: JsonOpt = False) -> None:
    """List tokens (ids, users, labels; never the secrets).

    Example: tide admin token list
    """
    with api() as c:
        ts = c.get("/v1/tokens")["tokens"]
    if as_json:
        print_json(ts)
        return
    table(
        ["ID", "User", "Name", "Created", "Expires", "Revoked"],
        [
            [
                t["id"],
                t["user"],
                t["name"],
                timestamp(t["created"]),
                timestamp(t["expires"]) if t["expires"] else "never",
                t["revoked"],
            ]
            for t in ts
        ],
    )


@token_app.command("revoke")
def token_revoke(token_id: int) -> None:
    """Revoke a token by id.

    Example: tide admin token revoke 3
    """
    with api() as c:
        c.delete(f"/v1/tokens/{token_id}")
    print(f"token {token_id} revoked")


# --- prices -----------------------------------------------------------------------------------


@price_app.command("set")
def price_set(
    gpu_type: Annotated[str, typer.Argument(help="GPU type, e.g. a100; 'default' for others")],
    per_gpu_hour: Annotated[float, typer.Argument(help="price of one GPU-hour")],
) -> None:
    """Set the price of one GPU-hour of a GPU type (used by `tide report`).

    Example: tide admin price set h100 4.50
    """
    t = "" if gpu_type == "default" else gpu_type
    with api() as c:
        prices = c.put("/v1/prices", {"gpu_type": t, "per_gpu_hour": per_gpu_hour})["prices"]
    _print_prices(prices)


@price_app.command("list")
def price_list(as_json: JsonOpt = False) -> None:
    """Show prices per GPU-hour.

    Example: tide admin price list
    """
    with api() as c:
        prices = c.get("/v1/prices")["prices"]
    if as_json:
        print_json(prices)
        return
    _print_prices(prices)


def _print_prices(prices: dict[str, float]) -> None:
    table(["GPU type", "Per GPU-hour"], [[k or "default", f"{v:.4f}"] for k, v in prices.items()])


# --- reservations ------------------------------------------------------------------------------


@resv_app.command("create")
def resv_create(
    name: str,
    duration_s: Annotated[str, typer.Option("--duration", help="e.g. 2:00:00 or 1-00:00:00")],
    start: Annotated[str, typer.Option(help="now, now+1hour, 2026-01-01T08:00")] = "now",
    nodes: Annotated[str, typer.Option(help="hostlist, e.g. gpu[01-04]")] = "",
    gpus: Annotated[int, typer.Option(help="or a GPU count on any nodes")] = 0,
    users: Annotated[str, typer.Option(help="comma list")] = "",
    accounts: Annotated[str, typer.Option(help="comma list")] = "",
    flags: Annotated[str, typer.Option(help="MAINT, IGNORE_JOBS, ...")] = "",
    partition: Annotated[str, typer.Option()] = "",
) -> None:
    """Reserve nodes (or GPUs) for users/accounts over a window; MAINT blocks everyone.

    Example: tide admin reservation create maint1 --start now+1day --duration 4:00:00
    --nodes gpu[01-08] --flags MAINT
    """
    from tide.jobspec.timefmt import parse_time_limit

    try:
        seconds = parse_time_limit(duration_s)
        begin = parse_time(start) if start else time.time()
    except ValueError as e:
        fail(str(e))
        return
    body = {
        "name": name,
        "start": begin,
        "duration": seconds,
        "nodes": [nodes] if nodes else [],
        "gpus": gpus,
        "users": csv_list([users]),
        "accounts": csv_list([accounts]),
        "flags": csv_list([flags]),
        "partition": partition,
    }
    with api() as c:
        r = c.post("/v1/reservations", body)
    print(f"reservation {r['name']}: {timestamp(r['start'])} - {timestamp(r['end'])}")


@resv_app.command("list")
def resv_list(as_json: JsonOpt = False) -> None:
    """List current and future reservations.

    Example: tide admin reservation list
    """
    with api() as c:
        rs = c.get("/v1/reservations")["reservations"]
    if as_json:
        print_json(rs)
        return
    from tide.hostlist import compress

    table(
        ["Name", "Start", "End", "Duration", "Nodes", "GPUs", "Users", "Accounts", "Flags"],
        [
            [
                r["name"],
                timestamp(r["start"]),
                timestamp(r["end"]),
                duration(r["end"] - r["start"]),
                compress(r["nodes"]) or "-",
                r["gpus"],
                ",".join(r["users"]),
                ",".join(r["accounts"]),
                ",".join(r["flags"]),
            ]
            for r in rs
        ],
    )


@resv_app.command("delete")
def resv_delete(name: str) -> None:
    """Delete a reservation.

    Example: tide admin reservation delete maint1
    """
    with api() as c:
        c.delete(f"/v1/reservations/{name}")
    print(f"reservation {name} deleted")
