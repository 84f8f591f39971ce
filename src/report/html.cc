#include "report/html.h"

#include "report/svg_plot.h"

namespace stagecraft {
namespace {

constexpr const char* kStyle = R"css(
:root { --fg: #1d2330; --muted: #5d6675; --line: #d8dde6; --bg: #ffffff; --band: #f4f6f9;
        --fits: #1f7a3a; --over: #b3261e; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
       color: var(--fg); background: var(--bg); }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); }
header h1 { margin: 0; font-size: 20px; }
header p { margin: 4px 0 0; color: var(--muted); }
nav { padding: 6px 28px; border-bottom: 1px solid var(--line); background: var(--band); }
nav a { margin-right: 14px; color: var(--fg); text-decoration: none; font-size: 13px; }
nav a:hover { text-decoration: underline; }
main { padding: 4px 28px 40px; max-width: 1480px; }
section { margin-top: 22px; }
section h2 { font-size: 16px; margin: 0 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
pre { background: var(--band); padding: 10px 12px; overflow-x: auto; font-size: 12px;
      line-height: 1.35; border-radius: 4px; }
table { border-collapse: collapse; font-size: 12.5px; margin: 4px 0 10px; }
th, td { padding: 3px 9px; border-bottom: 1px solid var(--line); text-align: right;
         white-space: nowrap; }
th { background: var(--band); font-weight: 600; }
th:first-child, td:first-child { text-align: left; }
tr.over td { color: var(--over); background: #fdf0ef; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 4px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.verdict { display: inline-block; padding: 4px 10px; border-radius: 4px; font-weight: 600; }
.verdict.fits { color: var(--fits); background: #e8f5ec; }
.verdict.over { color: var(--over); background: #fdf0ef; }
.verdict.unknown { color: var(--muted); background: var(--band); }
.note { color: var(--muted); font-size: 12.5px; }
.legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; margin: 4px 0 6px; }
.legend span.swatch { display: inline-block; width: 11px; height: 11px; margin-right: 4px;
                      vertical-align: -1px; border-radius: 2px; }
.timeline { position: relative; user-select: none; }
.timeline .controls { margin: 4px 0; font-size: 12px; color: var(--muted); }
.timeline .controls button { font-size: 12px; margin-right: 8px; }
.timeline-axis-row, .timeline-row { display: flex; align-items: center; }
.timeline-row .label, .timeline-axis-row .label { width: 74px; flex: none; font-size: 11.5px;
                                                  color: var(--muted); }
.timeline-row canvas, .timeline-axis-row canvas { flex: 1; min-width: 0; height: 100%;
                                                 display: block; }
.timeline-row { border-bottom: 1px solid #eef0f4; cursor: crosshair; }
.timeline .tooltip { position: absolute; pointer-events: none; background: #1d2330; color: #fff;
                     font-size: 12px; padding: 5px 8px; border-radius: 4px; white-space: pre;
                     display: none; z-index: 2; }
svg { max-width: 100%; height: auto; }
svg text { font: 11px system-ui, sans-serif; fill: var(--fg); }
)css";

// Draws every `.timeline` (data in its <script type="application/json">): one canvas per rank
// with a lane per stream, zoom with the wheel, pan by dragging, reset with a double click; a
// tooltip names the action under the pointer. Aggregated timelines hold, per lane, bins of
// (busy percent, dominant category) instead of events. Script errors land in <body data-errors>
// so a headless browser test sees them.
constexpr const char* kScript = R"js(
(function () {
  'use strict';
  var errors = [];
  window.addEventListener('error', function (e) {
    errors.push(String(e.message));
    document.body.setAttribute('data-errors', errors.join(' | '));
  });
  function ms(ns) { return (ns / 1e6).toFixed(3) + ' ms'; }
  function niceStep(span) {
    var raw = span / 8, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
  }
  function setup(root) {
    var started = performance.now();
    var data = JSON.parse(root.querySelector('script.timeline-data').textContent);
    var laneH = 10, lanes = data.lanes.length, stride = 6;
    var canvases = Array.prototype.slice.call(root.querySelectorAll('.timeline-row canvas'));
    var axis = root.querySelector('.timeline-axis-row canvas');
    var tip = root.querySelector('.tooltip');
    var view = [0, data.makespan], pending = false, maxDur = [];
    data.ranks.forEach(function (rank) {
      var per = [];
      rank.lanes.forEach(function (lane) {
        var longest = 0;
        if (data.mode === 'events') {
          for (var i = 1; i < lane.length; i += stride) longest = Math.max(longest, lane[i]);
        }
        per.push(longest);
      });
      maxDur.push(per);
    });
    function firstIndex(lane, t, longest) {
      var lo = 0, hi = lane.length / stride, from = t - longest;
      while (lo < hi) {
        var mid = (lo + hi) >> 1;
        if (lane[mid * stride] < from) lo = mid + 1; else hi = mid;
      }
      return lo;
    }
    function prepare(canvas, height) {
      var ratio = window.devicePixelRatio || 1, width = canvas.clientWidth || 800;
      if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
      if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
      var ctx = canvas.getContext('2d');
      ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
      ctx.clearRect(0, 0, width, height);
      return { ctx: ctx, width: width };
    }
    function drawAxis() {
      var c = prepare(axis, 18), span = view[1] - view[0], step = niceStep(span);
      c.ctx.fillStyle = '#5d6675';
      c.ctx.font = '10px system-ui, sans-serif';
      for (var t = Math.ceil(view[0] / step) * step; t <= view[1]; t += step) {
        var x = (t - view[0]) / span * c.width;
        c.ctx.fillRect(x, 12, 1, 6);
        c.ctx.fillText((t / 1e6).toFixed(step < 1e6 ? 3 : 1) + ' ms', x + 2, 10);
      }
    }
    function drawRank(index) {
      var canvas = canvases[index], rank = data.ranks[index];
      var c = prepare(canvas, lanes * laneH), span = view[1] - view[0];
      for (var l = 0; l < lanes; ++l) {
        var lane = rank.lanes[l], y = l * laneH;
        c.ctx.fillStyle = l % 2 ? '#fafbfc' : '#f3f5f8';
        c.ctx.fillRect(0, y, c.width, laneH);
        if (data.mode === 'events') {
          var lastX = -1, lastCat = -1;
          for (var i = firstIndex(lane, view[0], maxDur[index][l]); i * stride < lane.length; ++i) {
            var s = lane[i * stride], d = lane[i * stride + 1], cat = lane[i * stride + 2];
            if (s > view[1]) break;
            if (s + d < view[0]) continue;
            var x0 = (s - view[0]) / span * c.width, x1 = (s + d - view[0]) / span * c.width;
            if (x1 - x0 < 1 && Math.floor(x0) === lastX && cat === lastCat) continue;
            lastX = Math.floor(x0); lastCat = cat;
            c.ctx.fillStyle = data.categories[cat][1];
            c.ctx.fillRect(x0, y + 1, Math.max(x1 - x0, 1), laneH - 2);
          }
        } else {
          var width = data.makespan / data.bins;
          var b0 = Math.max(0, Math.floor(view[0] / width));
          var b1 = Math.min(data.bins - 1, Math.floor(view[1] / width));
          for (var b = b0; b <= b1; ++b) {
            var busy = lane[2 * b];
            if (busy === 0) continue;
            var bx0 = (b * width - view[0]) / span * c.width;
            var bx1 = ((b + 1) * width - view[0]) / span * c.width;
            c.ctx.globalAlpha = 0.25 + 0.75 * busy / 100;
            c.ctx.fillStyle = data.categories[lane[2 * b + 1]][1];
            c.ctx.fillRect(bx0, y + 1, Math.max(bx1 - bx0, 1), laneH - 2);
          }
          c.ctx.globalAlpha = 1;
        }
      }
    }
    function draw() {
      pending = false;
      drawAxis();
      for (var i = 0; i < canvases.length; ++i) drawRank(i);
    }
    function schedule() {
      if (!pending) { pending = true; window.requestAnimationFrame(draw); }
    }
    function timeAt(canvas, clientX) {
      var box = canvas.getBoundingClientRect();
      var f = Math.min(Math.max((clientX - box.left) / box.width, 0), 1);
      return view[0] + f * (view[1] - view[0]);
    }
    function describe(index, lane, t, tolerance) {
      var rank = data.ranks[index], events = rank.lanes[lane];
      if (data.mode !== 'events') {
        var width = data.makespan / data.bins, b = Math.floor(t / width);
        if (b < 0 || b >= data.bins || events[2 * b] === 0) return '';
        return 'rank ' + rank.rank + ', ' + data.lanes[lane] + '\n' + ms(b * width) + ' to ' +
               ms((b + 1) * width) + ': ' + events[2 * b] + '% busy, mostly ' +
               data.categories[events[2 * b + 1]][0];
      }
      for (var i = firstIndex(events, t - tolerance, maxDur[index][lane]);
           i * stride < events.length; ++i) {
        var s = events[i * stride], d = events[i * stride + 1];
        if (s > t + tolerance) break;
        if (s + d + tolerance < t) continue;
        var mb = events[i * stride + 3], stage = events[i * stride + 4];
        var peer = events[i * stride + 5];
        var text = data.categories[events[i * stride + 2]][0];
        if (mb >= 0) text += ' mb ' + mb;
        if (stage >= 0) text += ' stage ' + stage;
        text += '\nrank ' + rank.rank + (peer >= 0 ? ' to rank ' + peer : '') + ', ' +
                data.lanes[lane];
        return text + '\n' + ms(s) + ' to ' + ms(s + d) + ' (' + ms(d) + ')';
      }
      return '';
    }
    canvases.forEach(function (canvas, index) {
      canvas.addEventListener('mousemove', function (e) {
        var box = canvas.getBoundingClientRect();
        var lane = Math.min(lanes - 1, Math.max(0, Math.floor((e.clientY - box.top) / laneH)));
        var perPixel = (view[1] - view[0]) / box.width;
        var text = describe(index, lane, timeAt(canvas, e.clientX), 2 * perPixel);
        if (!text) { tip.style.display = 'none'; return; }
        var outer = root.getBoundingClientRect();
        tip.textContent = text;
        tip.style.display = 'block';
        tip.style.left = Math.min(e.clientX - outer.left + 14, outer.width - 260) + 'px';
        tip.style.top = (e.clientY - outer.top + 14) + 'px';
      });
      canvas.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
      canvas.addEventListener('wheel', function (e) {
        e.preventDefault();
        var at = timeAt(canvas, e.clientX), span = view[1] - view[0];
        var next = Math.min(data.makespan, Math.max(1000, span * Math.exp(e.deltaY * 0.002)));
        var start = at - (at - view[0]) * next / span;
        start = Math.min(Math.max(start, 0), data.makespan - next);
        view = [start, start + next];
        schedule();
      }, { passive: false });
      var dragging = null;
      canvas.addEventListener('mousedown', function (e) { dragging = [e.clientX, view[0]]; });
      window.addEventListener('mouseup', function () { dragging = null; });
      window.addEventListener('mousemove', function (e) {
        if (!dragging) return;
        var span = view[1] - view[0];
        var start = dragging[1] - (e.clientX - dragging[0]) / canvas.clientWidth * span;
        start = Math.min(Math.max(start, 0), data.makespan - span);
        view = [start, start + span];
        schedule();
      });
      canvas.addEventListener('dblclick', function () { view = [0, data.makespan]; schedule(); });
    });
    root.querySelector('button.reset').addEventListener('click', function () {
      view = [0, data.makespan]; schedule();
    });
    window.addEventListener('resize', schedule);
    draw();
    root.setAttribute('data-render-ms', (performance.now() - started).toFixed(1));
  }
  function start() {
    Array.prototype.forEach.call(document.querySelectorAll('.timeline'), setup);
    // Milliseconds from the start of navigation until the page is drawn and ready.
    document.body.setAttribute('data-open-ms', performance.now().toFixed(1));
    document.body.setAttribute('data-ready', '1');
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
)js";

}  // namespace

HtmlPage::HtmlPage(std::string title, std::string subtitle)
    : title_(std::move(title)), subtitle_(std::move(subtitle)) {}

std::string HtmlPage::Render() const {
  std::string html;
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  html += "<title>" + XmlEscape(title_) + "</title>\n<style>" + kStyle + "</style>\n</head>\n";
  html += "<body>\n<header><h1>" + XmlEscape(title_) + "</h1><p>" + XmlEscape(subtitle_) +
          "</p></header>\n<nav>";
  for (const HtmlSection& section : sections_) {
    html += "<a href=\"#" + XmlEscape(section.id) + "\">" + XmlEscape(section.title) + "</a>";
  }
  html += "</nav>\n<main>\n";
  for (const HtmlSection& section : sections_) {
    html += "<section id=\"" + XmlEscape(section.id) + "\">\n<h2>" + XmlEscape(section.title) +
            "</h2>\n" + section.body + "\n</section>\n";
  }
  html += "</main>\n<script>" + std::string(kScript) + "</script>\n</body>\n</html>\n";
  return html;
}

std::string HtmlPre(const std::string& text) { return "<pre>" + XmlEscape(text) + "</pre>"; }

std::string HtmlTable(const std::vector<std::string>& header,
                      const std::vector<std::vector<std::string>>& rows,
                      const std::vector<std::string>& row_classes) {
  std::string html = "<table>\n<thead><tr>";
  for (const std::string& cell : header) html += "<th>" + XmlEscape(cell) + "</th>";
  html += "</tr></thead>\n<tbody>\n";
  for (size_t index = 0; index < rows.size(); ++index) {
    const bool has_class = index < row_classes.size() && !row_classes[index].empty();
    html += has_class ? "<tr class=\"" + XmlEscape(row_classes[index]) + "\">" : "<tr>";
    for (const std::string& cell : rows[index]) html += "<td>" + XmlEscape(cell) + "</td>";
    html += "</tr>\n";
  }
  return html + "</tbody>\n</table>";
}

std::string HtmlFacts(const std::vector<std::pair<std::string, std::string>>& facts) {
  std::string html = "<dl class=\"facts\">\n";
  for (const auto& [name, value] : facts) {
    html += "<dt>" + XmlEscape(name) + "</dt><dd>" + XmlEscape(value) + "</dd>\n";
  }
  return html + "</dl>";
}

std::string HtmlVerdict(bool known, bool fits, const std::string& text) {
  const char* kind = !known ? "unknown" : fits ? "fits" : "over";
  return std::string("<p><span class=\"verdict ") + kind + "\">" + XmlEscape(text) + "</span></p>";
}

}  // namespace stagecraft
