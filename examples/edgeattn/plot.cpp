#include "plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

namespace edgeattn::cli {
namespace {

struct Series {
  const char* label;
  const char* color;
  std::function<double(const train::EpochStats&)> value;
};

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else
      out += c;
  }
  return out;
}

// One panel at (x0, y0) of size w x h.
std::string panel(const std::vector<train::EpochStats>& h, int64_t best, const std::vector<Series>& series,
                  const char* ylabel, double x0, double y0, double w, double h_px, bool unit_range) {
  double lo = unit_range ? 0.0 : 1e300, hi = unit_range ? 1.0 : -1e300;
  if (!unit_range)
    for (const auto& s : series)
      for (const auto& e : h) {
        const double v = s.value(e);
        if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
      }
  if (!(hi > lo)) hi = lo + 1;
  const double epochs = static_cast<double>(std::max<size_t>(h.size(), 2) - 1);
  const auto px = [&](double epoch) { return x0 + w * epoch / epochs; };
  const auto py = [&](double v) { return y0 + h_px * (1.0 - (v - lo) / (hi - lo)); };
  std::string svg;
  svg += "<rect x='" + fmt("%.1f", x0) + "' y='" + fmt("%.1f", y0) + "' width='" + fmt("%.1f", w) +
         "' height='" + fmt("%.1f", h_px) + "' fill='none' stroke='#888'/>\n";
  for (int t = 0; t <= 4; ++t) {  // y ticks
    const double v = lo + (hi - lo) * t / 4.0;
    svg += "<text x='" + fmt("%.1f", x0 - 6) + "' y='" + fmt("%.1f", py(v) + 4) + "' text-anchor='end'>" +
           fmt(unit_range ? "%.2f" : "%.3g", v) + "</text>\n";
  }
  svg += "<text x='" + fmt("%.1f", x0 + w / 2) + "' y='" + fmt("%.1f", y0 + h_px + 32) +
         "' text-anchor='middle'>epoch (0 - " + std::to_string(h.size() ? h.size() - 1 : 0) + ")</text>\n";
  svg += "<text x='" + fmt("%.1f", x0) + "' y='" + fmt("%.1f", y0 - 8) + "'>" + ylabel + "</text>\n";
  if (best >= 0 && best < static_cast<int64_t>(h.size()))
    svg += "<line x1='" + fmt("%.1f", px(static_cast<double>(best))) + "' y1='" + fmt("%.1f", y0) + "' x2='" +
           fmt("%.1f", px(static_cast<double>(best))) + "' y2='" + fmt("%.1f", y0 + h_px) +
           "' stroke='#999' stroke-dasharray='4 3'/>\n";
  double legend_y = y0 + 16;
  for (const auto& s : series) {
    std::string points;
    for (size_t i = 0; i < h.size(); ++i) {
      const double v = s.value(h[i]);
      if (!std::isfinite(v)) continue;
      points += fmt("%.1f", px(static_cast<double>(i))) + "," + fmt("%.1f", py(std::clamp(v, lo, hi))) + " ";
    }
    svg += "<polyline fill='none' stroke='" + std::string(s.color) + "' stroke-width='1.5' points='" +
           points + "'/>\n";
    svg += "<text x='" + fmt("%.1f", x0 + w - 8) + "' y='" + fmt("%.1f", legend_y) +
           "' text-anchor='end' fill='" + s.color + "'>" + s.label + "</text>\n";
    legend_y += 16;
  }
  return svg;
}

}  // namespace

std::string training_curves_svg(const std::vector<train::EpochStats>& history, int64_t best_epoch,
                                const std::string& title) {
  const std::vector<Series> loss = {
      {"train loss", "#1f77b4", [](const train::EpochStats& e) { return e.train_loss; }},
      {"val loss", "#ff7f0e", [](const train::EpochStats& e) { return e.val_loss; }},
  };
  const std::vector<Series> acc = {
      {"train acc", "#1f77b4", [](const train::EpochStats& e) { return e.train_accuracy; }},
      {"val acc", "#ff7f0e", [](const train::EpochStats& e) { return e.val_accuracy; }},
      {"test acc", "#2ca02c", [](const train::EpochStats& e) { return e.test_accuracy; }},
  };
  std::string svg =
      "<svg xmlns='http://www.w3.org/2000/svg' width='960' height='400' font-family='sans-serif' "
      "font-size='12'>\n"
      "<rect width='100%' height='100%' fill='white'/>\n";
  svg += "<text x='480' y='22' text-anchor='middle' font-size='15'>" + escape(title) + "</text>\n";
  svg += panel(history, best_epoch, loss, "loss", 70, 50, 360, 290, false);
  svg += panel(history, best_epoch, acc, "accuracy", 560, 50, 360, 290, true);
  svg +=
      "<text x='480' y='392' text-anchor='middle' fill='#666'>dashed line: the epoch whose weights were "
      "kept</text>\n";
  return svg + "</svg>\n";
}

}  // namespace edgeattn::cli
