"""Benchmark results as a terminal table and as a self-contained HTML report (inline SVG plots:
the latency distribution per model, ours against the peer, and the accuracy table)."""
from __future__ import annotations

import html
import math
import platform
import time

from ..console import render_table
from .session import ModelResult


def _fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def table(results: list[ModelResult]) -> str:
    """The results as a plain-text table (gpu_driver.console), with the geometric mean of the ratios."""
    rows = []
    for r in results:
        if r.error:
            rows.append([r.name] + ["–"] * 8 + [f"error: {r.error}"])
            continue
        acc = ", ".join(f"{v.name}: {v.verdict}" for v in r.accuracy) or "–"
        rows.append([r.name, r.operations, _fmt(r.prepare_cold_s), _fmt(r.prepare_cached_s, 3),
                     _fmt(r.ours.median), f"{_fmt(r.ours.percentile(25))}–{_fmt(r.ours.percentile(75))}",
                     _fmt(r.ours.percentile(90)), _fmt(r.peer.median if r.peer else None), _fmt(r.ratio), acc])
    lines = [render_table(["model", "ops", "prep s", "cache s", "p50 ms", "p25–p75 ms", "p90 ms", "peer ms",
                           "ratio", "accuracy"], rows, text_columns=["accuracy"])]
    ratios = [r.ratio for r in results if r.ratio]
    if ratios:
        geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
        lines.append(f"geometric mean of the latency ratios (ours ÷ peer): {geo:.2f}")
    return "\n".join(lines)


def _strip_plot(r: ModelResult, width: int = 640, row: int = 36) -> str:
    """Latency samples of ours and the peer as dot strips on one log-free millisecond axis, with
    the median marked."""
    series = [("ours (" + r.device + ")", r.ours.samples, "#1f77b4")]
    if r.peer:
        series.append((r.peer_name or "peer", r.peer.samples, "#ff7f0e"))
    hi = max((max(s) for _, s, _ in series if s), default=1.0) * 1.05
    left, plot_w = 150, width - 170
    height = row * len(series) + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-size="12">']
    for k, (label, samples, colour) in enumerate(series):
        y = 20 + k * row
        parts.append(f'<text x="4" y="{y + 4}">{html.escape(label)}</text>')
        for s in samples:
            parts.append(f'<circle cx="{left + plot_w * s / hi:.1f}" cy="{y}" r="2.5" fill="{colour}" '
                         f'fill-opacity="0.5"/>')
        if samples:
            med = sorted(samples)[len(samples) // 2]
            x = left + plot_w * med / hi
            parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y - 10}" y2="{y + 10}" stroke="black" stroke-width="2"/>')
    axis_y = 20 + len(series) * row - 10
    parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{axis_y}" y2="{axis_y}" stroke="#888"/>')
    for t in range(6):
        v = hi * t / 5
        x = left + plot_w * t / 5
        parts.append(f'<text x="{x:.1f}" y="{axis_y + 16}" text-anchor="middle">{v:.2f} ms</text>')
    parts.append("</svg>")
    return "".join(parts)


def html_report(results: list[ModelResult]) -> str:
    rows = []
    for r in results:
        if r.error:
            rows.append(f"<h2>{html.escape(r.name)}</h2><p>error: {html.escape(r.error)}</p>")
            continue
        acc = "".join(
            f"<tr><td>{html.escape(v.name)}</td><td>{v.max_diff:.3g}</td><td>{v.fp32_bound:.3g}</td>"
            f"<td>{_fmt(v.relaxed_bound, 6) if v.relaxed_bound is not None else '–'}</td>"
            f"<td class='{v.verdict}'>{v.verdict}</td></tr>" for v in r.accuracy)
        rows.append(
            f"<h2>{html.escape(r.name)}</h2>"
            f"<p>{r.operations} NNAPI operations on {html.escape(r.device)}; preparation {r.prepare_cold_s:.2f} s "
            f"cold, {_fmt(r.prepare_cached_s, 3)} s from the compilation cache; median {r.ours.median:.2f} ms "
            f"(p10 {r.ours.percentile(10):.2f}, p90 {r.ours.percentile(90):.2f})"
            + (f"; {html.escape(r.peer_name)}{f' ({r.threads} threads)' if r.threads else ''} median "
               f"{r.peer.median:.2f} ms, ratio {r.ratio:.2f}" if r.peer else "")
            + "</p>" + _strip_plot(r)
            + ("<table><tr><th>output</th><th>max |d|</th><th>fp32 bound</th><th>relaxed bound</th>"
               f"<th>verdict</th></tr>{acc}</table>" if r.accuracy else ""))
    style = ("body{font-family:sans-serif;max-width:760px;margin:2em auto}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:2px 8px}.fail{color:#b00;font-weight:bold}.fp32{color:#070}"
             ".relaxed{color:#a60}pre{background:#f4f4f4;padding:8px}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>gpu_driver model benchmark</title>"
            f"<style>{style}</style></head><body><h1>gpu_driver model benchmark</h1>"
            f"<p>{html.escape(platform.platform())}, {html.escape(platform.processor() or platform.machine())}, "
            f"{time.strftime('%Y-%m-%d %H:%M')}</p><pre>{html.escape(table(results))}</pre>"
            + "".join(rows) + "</body></html>")
