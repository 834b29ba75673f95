"""The patterns report: the table, then which pattern wins on which figure and
why, in terms of the mechanism that makes the difference, with the run's own
numbers (docs/services.md, "The twin")."""

from __future__ import annotations

from typing import Any

from tide.sim.serving.table import ROWS, best, fmt, value

MECHANISM = {
    "split": "fixed pools: the serving GPUs serve or sit idle, nothing is borrowed, "
    "nothing is reclaimed",
    "bridge": "whole idle serving nodes are lent; one comes back only after its borrowed "
    "jobs end (drain) and a switching gap",
    "tidal": "single idle serving GPUs are lent after a window of measured idleness; a "
    "scale-up reclaims them by preempting the borrowers that lose least, with a grace "
    "bounded by the reclaim objective",
    "unified": "one pool: training takes any idle GPU at once; replicas take GPUs back by "
    "preempting training (lowest priority, youngest first, checkpoint or not) with a "
    "30 s grace, one blocked replica at a time",
}


def markdown(result: dict[str, Any]) -> str:
    sc, pats = result["scenario"], result["patterns"]
    names = list(pats)
    lines = [
        f"# Patterns compared: {sc['name']}",
        "",
        f"{sc['days']:g} days, {sc['nodes']} nodes / {sc['gpus']} GPUs, serving pool "
        f"{sc['serving_gpus']} GPUs (where the pattern has one); services: "
        f"{', '.join(sc['services'])}.",
        "",
        *[f"- {n}" for n in sc["notes"]],
        "",
        "| figure | " + " | ".join(names) + " |",
        "|---|" + "---:|" * len(names),
    ]
    for label, section, key, kind, better in ROWS:
        winners = set(best(result, section, key, better))
        cells = []
        for p in names:
            text = fmt(value(pats[p], section, key), kind)
            cells.append(f"**{text}**" if p in winners and len(winners) < len(names) else text)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "Bold: the best value of the row. Costs in the price's currency, per month "
              "(730 h), at the same training output (a pattern short of the best rents the "
              "difference) and the same service objective.", ""]  # fmt: skip
    lines += ["## Who wins what, and why", "", *explain(result), ""]
    lines += ["## The patterns", ""]
    lines += [f"- **{p}**: {MECHANISM.get(p, '')}." for p in names]
    return "\n".join(lines) + "\n"


def explain(result: dict[str, Any]) -> list[str]:
    pats = result["patterns"]
    out = [_service(result), _training(result), _lost(result)]
    if any(value(f, "cluster", "switching_gpu_hours") for f in pats.values()):
        out.append(_switching(result))
    out.append(_cost(result))
    return [f"- {line}" for line in out if line]


def _g(result: dict[str, Any], p: str, section: str, key: str) -> Any:
    return value(result["patterns"][p], section, key)


TIE = 0.001  # objective shares closer than 0.1 point: a tie at one run's noise


def _service(result: dict[str, Any]) -> str:
    w = best(result, "service", "slo_attainment", "high")
    if not w:
        return ""
    pats = result["patterns"]
    target = result.get("prices", {}).get("slo_target", 0.99)
    att = {p: _g(result, p, "service", "slo_attainment") for p in pats}
    top = max(att.values())
    near = [p for p in pats if top - att[p] <= TIE]
    met = [p for p in pats if att[p] >= target]
    missed = [p for p in pats if att[p] < target]
    lead = (
        f"{', '.join(near)} best"
        if len(near) == 1
        else (f"{', '.join(near)} tie (within {100 * TIE:g} point)")
    )
    verdict = f"met ({100 * target:g}% of requests) by {', '.join(met) or 'none'}"
    if missed:
        verdict += f", missed by {', '.join(missed)}"
    parts = []
    for p in result["patterns"]:
        att = _g(result, p, "service", "slo_attainment")
        under = _g(result, p, "service", "under_replicated_hours")
        late = _g(result, p, "service", "ready_after_max")
        parts.append(f"{p} {100 * att:.2f}% ({under:.2f} h with too few replicas, slowest "
                     f"scale-up ready {fmt(late, 'f0')} s after its decision)")  # fmt: skip
    why = (
        "A pattern keeps the objective by having replicas ready when the load rises: "
        "split never lends its serving GPUs; tidal gets them back within the reclaim "
        "objective; bridge waits for lent nodes to drain and switch; unified competes with "
        "training for every GPU and preempts one blocked replica's victims at a time."
    )
    return f"**Service objective**: {lead}; {verdict}. " + "; ".join(parts) + ". " + why


def _training(result: dict[str, Any]) -> str:
    w = best(result, "training", "useful_train_gpu_hours", "high")
    if not w:
        return ""
    pats = result["patterns"]
    base = next(iter(pats))
    ref = _g(result, base, "training", "useful_train_gpu_hours") or 1.0
    parts = []
    for p in pats:
        useful = _g(result, p, "training", "useful_train_gpu_hours")
        borrowed = _g(result, p, "training", "borrowed_gpu_hours")
        parts.append(f"{p} {useful:,.0f} GPU-h ({100 * (useful / ref - 1):+.1f}% vs {base}, "
                     f"{borrowed:,.0f} on borrowed serving GPUs)")  # fmt: skip
    idle = {p: _g(result, p, "cluster", "idle_gpu_hours") for p in pats}
    most_idle = max(idle, key=lambda p: idle[p])
    return (f"**Training output**: {', '.join(w)} delivers the most useful training. "
            + "; ".join(parts) + f". The difference is idle serving capacity put to work: "
            f"{most_idle} leaves the most GPU-hours idle ({idle[most_idle]:,.0f}); GPU-granular "
            "lending (tidal) uses nodes that still carry replicas, whole-node lending "
            "(bridge) only empty ones, and only for jobs short enough to drain.")  # fmt: skip


def _lost(result: dict[str, Any]) -> str:
    pats = result["patterns"]
    w = best(result, "training", "lost_gpu_hours", "low")
    parts = [f"{p} {_g(result, p, 'training', 'lost_gpu_hours'):,.1f} GPU-h in "
             f"{_g(result, p, 'training', 'preemptions')} preemptions" for p in pats]  # fmt: skip
    return (f"**Lost work**: {', '.join(w)} loses least. " + "; ".join(parts)
            + ". Nothing is lost where nothing is reclaimed (split, and bridge, which waits "
            "instead); tidal preempts only checkpointing borrowers and picks those whose "
            "last checkpoint is most recent; unified preempts by priority and age, "
            "checkpoint or not.")  # fmt: skip


def _switching(result: dict[str, Any]) -> str:
    parts = [f"{p} {_g(result, p, 'cluster', 'switching_gpu_hours'):,.1f} GPU-h"
             for p in result["patterns"]]  # fmt: skip
    return (
        "**Switching gaps**: " + "; ".join(parts) + ". Only whole-node moves pay them: "
        "a node changing sides is paid and serves nobody for the switching gap."
    )


def _cost(result: dict[str, Any]) -> str:
    pats, prices = result["patterns"], result["prices"]
    w = best(result, "cost", "monthly_cost", "low")
    base = prices["baseline"]
    parts = []
    for p in pats:
        c = pats[p]["cost"]
        flag = "" if c["meets_slo"] else " (misses the service objective: not comparable)"
        if p == base:
            parts.append(f"{p} {c['monthly_cost']:,.0f} (baseline){flag}")
            continue
        payback = fmt(c["payback_months"], "months")
        parts.append(f"{p} {c['monthly_cost']:,.0f}, saving {c['monthly_net_saving']:,.0f}/month,"
                     f" payback {payback} months on {c['investment']:,.0f}{flag}")  # fmt: skip
    return (f"**Cost** (seed 000: net saving = baseline's monthly cost - candidate's; payback "
            f"= one-time investment / net saving; {prices['gpu_hour']:g} per GPU-hour): "
            f"{', '.join(w)} cheapest. " + "; ".join(parts) + ". Every pattern pays the same "
            "fleet; idle, recomputed and switching hours are inside that bill ("
            + ", ".join(f"{p} {100 * _g(result, p, 'cluster', 'wasted_share'):.1f}%"
                        for p in pats)
            + " of it delivered nothing), and a pattern that trains less rents the shortfall "
            "to reach the same output.")  # fmt: skip
