// Shape arithmetic over flexible sizes. With fixed sizes, traced models'
// arithmetic (x.size(0) // 2, ...) folds to constants (core/converter.cpp);
// when a size comes from a flexible dim, aten::size gives a load-time int
// (SymInt), and the nodes here carry it on as an expression of the
// shape-compute script, which view and reshape then consume.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "lower/constant_value.h"
#include "lower/registry.h"

namespace nnapi_convert {
namespace {

c10::Symbol sym(const char* name) { return c10::Symbol::fromQualString(name); }

bool any_symbolic(const LoweringContext& cx, const Node* node) {
  for (const Value* in : node->inputs()) {
    if (cx.has_symbolic(in)) return true;
  }
  return false;
}

// max(a, b) or min(a, b): a number, or the script's max(...)/min(...).
SymInt sym_extreme(const SymInt& a, const SymInt& b, bool is_max) {
  if (a.is_constant() && b.is_constant()) {
    return {is_max ? std::max(a.value, b.value) : std::min(a.value, b.value), ""};
  }
  return {0, std::string(is_max ? "max(" : "min(") + a.str() + ", " + b.str() + ")"};
}

// A true division whose every use rounds it (math.ceil(i / s), (i / s).ceil(),
// floor): its result is never needed as a float.
bool only_rounded(const Node* div) {
  for (const torch::jit::Use& u : div->output()->uses()) {
    const c10::Symbol k = u.user->kind();
    if (k != c10::aten::ceil && k != c10::aten::floor) return false;
  }
  return !div->output()->uses().empty();
}

bool is_true_division(const LoweringContext& cx, const Node* node) {
  return node->kind() == c10::aten::div &&
         !(node->inputs().size() == 3 && cx.has_constant(node->input(2)) &&
           cx.constant(node->input(2)).value.isString());
}

// ---- Deciding a comparison of load-time sizes for every size.
//
// A shape-compute expression of one flexible size i (>= 1) built from
// numbers, +, -, * by a number, // by a positive number and max/min is, for
// each residue r in 1..L (L the product of its divisors) and every q >= 0,
// f(L q + r) = a(r) q + b(r) with integer a(r), b(r), when each // divides
// its dividend's a exactly and each max/min has arms of equal a. Its sign for
// all i >= 1 then follows from a and b at each r: ceil(i / s) * s - i of
// TF-style "same" padding is periodic (a = 0), so `pad_h > 0` is decided.
struct Expr {
  char op;  // 'n' number, 'v' the size, + - * / (Python's //), 'M' max, 'm' min
  int64_t value = 0;
  std::unique_ptr<Expr> lhs, rhs;
};

// A parser of the script text sym_arith, padded_dim and sym_extreme write:
// integers, one name, + - * //, unary -, parentheses, max(a, b), min(a, b).
// Anything else (or a second name) leaves it undecided.
class ExprParser {
 public:
  explicit ExprParser(std::string text) : t_(std::move(text)) {}
  std::unique_ptr<Expr> parse() {
    std::unique_ptr<Expr> e = sum();
    skip();
    return ok_ && at_ == t_.size() ? std::move(e) : nullptr;
  }

 private:
  void skip() {
    while (at_ < t_.size() && t_[at_] == ' ') ++at_;
  }
  bool eat(const std::string& token) {
    skip();
    if (t_.compare(at_, token.size(), token) != 0) return false;
    at_ += token.size();
    return true;
  }
  static std::unique_ptr<Expr> make(char op, std::unique_ptr<Expr> a, std::unique_ptr<Expr> b) {
    auto e = std::make_unique<Expr>();
    e->op = op;
    e->lhs = std::move(a);
    e->rhs = std::move(b);
    return e;
  }
  std::unique_ptr<Expr> sum() {
    std::unique_ptr<Expr> e = product();
    while (ok_) {
      if (eat("+")) {
        e = make('+', std::move(e), product());
      } else if (eat("-")) {
        e = make('-', std::move(e), product());
      } else {
        break;
      }
    }
    return e;
  }
  std::unique_ptr<Expr> product() {
    std::unique_ptr<Expr> e = unary();
    while (ok_) {
      if (eat("//")) {
        e = make('/', std::move(e), unary());
      } else if (eat("*")) {
        e = make('*', std::move(e), unary());
      } else {
        break;
      }
    }
    return e;
  }
  std::unique_ptr<Expr> unary() {
    if (eat("-")) {
      auto zero = std::make_unique<Expr>();
      zero->op = 'n';
      return make('-', std::move(zero), unary());
    }
    return atom();
  }
  // max(a, b) or min(a, b) after its "max(" or "min(".
  std::unique_ptr<Expr> extreme(char op) {
    std::unique_ptr<Expr> a = sum();
    ok_ = ok_ && eat(",");
    std::unique_ptr<Expr> b = sum();
    ok_ = ok_ && eat(")");
    return make(op, std::move(a), std::move(b));
  }
  std::unique_ptr<Expr> atom() {
    skip();
    auto e = std::make_unique<Expr>();
    if (eat("(")) {
      e = sum();
      ok_ = ok_ && eat(")");
    } else if (eat("max(")) {
      e = extreme('M');
    } else if (eat("min(")) {
      e = extreme('m');
    } else if (at_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[at_]))) {
      size_t end = at_;
      while (end < t_.size() && std::isdigit(static_cast<unsigned char>(t_[end]))) ++end;
      ok_ = ok_ && end - at_ <= 12;
      e->op = 'n';
      if (ok_) e->value = std::stoll(t_.substr(at_, end - at_));
      at_ = end;
    } else if (at_ < t_.size() &&
               (std::isalpha(static_cast<unsigned char>(t_[at_])) || t_[at_] == '_')) {
      size_t end = at_;
      while (end < t_.size() &&
             (std::isalnum(static_cast<unsigned char>(t_[end])) || t_[end] == '_')) {
        ++end;
      }
      const std::string name = t_.substr(at_, end - at_);
      ok_ = ok_ && (var_.empty() || var_ == name);
      var_ = name;
      e->op = 'v';
      at_ = end;
    } else {
      ok_ = false;
    }
    return e;
  }

  std::string t_;
  size_t at_ = 0;
  bool ok_ = true;
  std::string var_;  // the one flexible size
};

// Python's floor division.
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

// The product of the expression's divisors (the period L), or 0 above a cap.
int64_t period(const Expr& e) {
  int64_t p = 1;
  if (e.op == '/' && e.rhs->op == 'n') p = e.rhs->value;
  for (const Expr* child : {e.lhs.get(), e.rhs.get()}) {
    if (!child) continue;
    const int64_t c = period(*child);
    if (c <= 0 || p > 4096 / c) return 0;
    p *= c;
  }
  return p;
}

struct Affine {
  int64_t a = 0, b = 0;  // f(L q + r) = a q + b
};

std::optional<Affine> affine_at(const Expr& e, int64_t L, int64_t r);

// (a, b) of `e` at residue r of period L; nullopt where it is no such line
// (or its numbers grow past 2^40, far from any size).
std::optional<Affine> bounded_affine_at(const Expr& e, int64_t L, int64_t r) {
  const std::optional<Affine> f = affine_at(e, L, r);
  constexpr int64_t kLimit = int64_t{1} << 40;
  if (!f || std::abs(f->a) > kLimit || std::abs(f->b) > kLimit) return std::nullopt;
  return f;
}

std::optional<Affine> affine_at(const Expr& e, int64_t L, int64_t r) {
  if (e.op == 'n') return Affine{0, e.value};
  if (e.op == 'v') return Affine{L, r};
  const std::optional<Affine> x = bounded_affine_at(*e.lhs, L, r),
                              y = bounded_affine_at(*e.rhs, L, r);
  if (!x || !y) return std::nullopt;
  switch (e.op) {
    case '+':
      return Affine{x->a + y->a, x->b + y->b};
    case '-':
      return Affine{x->a - y->a, x->b - y->b};
    case '*':
      if (x->a != 0 && y->a != 0) return std::nullopt;
      return Affine{x->a * y->b + y->a * x->b, x->b * y->b};
    case '/':
      if (y->a != 0 || y->b <= 0 || x->a % y->b != 0) return std::nullopt;
      return Affine{x->a / y->b, floor_div(x->b, y->b)};
    default:  // 'M', 'm'
      if (x->a != y->a) return std::nullopt;
      return Affine{x->a, e.op == 'M' ? std::max(x->b, y->b) : std::min(x->b, y->b)};
  }
}

// Whether `lhs cmp rhs` holds for every value of the flexible size (true),
// for none (false), or depends on it (nullopt).
std::optional<bool> decide_for_every_size(const SymInt& lhs, const std::string& cmp,
                                          const SymInt& rhs) {
  const std::unique_ptr<Expr> e = ExprParser("(" + lhs.str() + ") - (" + rhs.str() + ")").parse();
  if (!e) return std::nullopt;
  const int64_t L = period(*e);
  if (L <= 0) return std::nullopt;
  // The sign of h = lhs - rhs: can it be negative, zero, positive?
  bool neg = false, zero = false, pos = false;
  for (int64_t r = 1; r <= L; ++r) {
    const std::optional<Affine> h = bounded_affine_at(*e, L, r);
    if (!h) return std::nullopt;
    // h->a q + h->b over q >= 0: b at q = 0, then it moves by the sign of a
    // without bound (it crosses zero at most once, maybe between integers).
    neg = neg || h->b < 0 || h->a < 0;
    pos = pos || h->b > 0 || h->a > 0;
    zero = zero || h->b == 0 || (h->a != 0 && (-h->b) % h->a == 0 && -h->b / h->a >= 0);
  }
  // Each flag is exact: h takes a negative, zero or positive value for some
  // size. The comparison holds for every size when it holds for each sign h
  // takes, for none when it holds for none of them.
  const auto holds = [&](bool n, bool z, bool p) -> std::optional<bool> {
    if ((!neg || n) && (!zero || z) && (!pos || p)) return true;      // every value satisfies
    if ((!neg || !n) && (!zero || !z) && (!pos || !p)) return false;  // none does
    return std::nullopt;
  };
  if (cmp == "aten::gt") return holds(false, false, true);
  if (cmp == "aten::ge") return holds(false, true, true);
  if (cmp == "aten::lt") return holds(true, false, false);
  if (cmp == "aten::le") return holds(true, true, false);
  if (cmp == "aten::eq") return holds(false, true, false);
  if (cmp == "aten::ne") return holds(true, false, true);
  return std::nullopt;
}

}  // namespace

bool lower_symbolic_arithmetic(LoweringContext& cx, const Node* node) {
  if (!any_symbolic(cx, node)) return false;
  const c10::Symbol kind = node->kind();
  const Value* out = node->outputs().size() == 1 ? node->output() : nullptr;
  if (kind == sym("prim::NumToTensor") || kind == sym("aten::Int") ||
      kind == sym("aten::ScalarImplicit")) {
    cx.add_symbolic(out, {cx.sym_int(node->input(0))});
    return true;
  }
  if (is_true_division(cx, node) && only_rounded(node)) {
    // ceil(i / s) and floor(i / s) of TF-style "same" padding: the rounding
    // nodes compute it from the division's inputs (sizes and strides are
    // positive). The numerator stands for it until then.
    cx.add_symbolic(out, {cx.sym_int(node->input(0))});
    return true;
  }
  if ((kind == c10::aten::ceil || kind == c10::aten::floor) &&
      is_true_division(cx, node->input(0)->node())) {
    const Node* div = node->input(0)->node();
    const SymInt a = cx.sym_int(div->input(0)), b = cx.sym_int(div->input(1));
    check(b.is_constant() && b.value > 0,
          "rounding a division of a flexible size by a divisor known only when the model is "
          "loaded; divide by a fixed positive number");
    const SymInt up = kind == c10::aten::ceil ? sym_arith(a, '+', {b.value - 1, ""}) : a;
    cx.add_symbolic(out, {sym_arith(up, '/', b)});
    return true;
  }
  if (kind == c10::aten::ceil || kind == c10::aten::floor) {
    cx.add_symbolic(out, {cx.sym_int(node->input(0))});  // of an int: itself
    return true;
  }
  if (kind == c10::prim::max || kind == c10::prim::min) {
    check(node->inputs().size() == 2, "max/min of a list of sizes is not supported");
    cx.add_symbolic(out, {sym_extreme(cx.sym_int(node->input(0)), cx.sym_int(node->input(1)),
                                      kind == c10::prim::max)});
    return true;
  }
  if (kind == c10::aten::clamp && cx.has_symbolic(node->input(0))) {
    // torch.clamp(pad, min=0) of a size (timm's get_same_padding, traced).
    SymInt v = cx.sym_int(node->input(0));
    const auto bound = [&](size_t i) {
      return node->inputs().size() > i &&
             !(cx.has_constant(node->input(i)) && cx.constant(node->input(i)).value.isNone());
    };
    // As PyTorch: min(max(v, lo), hi), so hi wins where lo > hi.
    if (bound(1)) v = sym_extreme(v, cx.sym_int(node->input(1)), true);
    if (bound(2)) v = sym_extreme(v, cx.sym_int(node->input(2)), false);
    cx.add_symbolic(out, {v});
    return true;
  }
  if (kind == sym("aten::floor_divide") || kind == sym("aten::floordiv") ||
      kind == sym("aten::div")) {
    if (kind == sym("aten::div")) {
      // Sizes are positive, so "trunc" and "floor" agree.
      check(node->inputs().size() == 3 && cx.has_constant(node->input(2)) &&
                cx.constant(node->input(2)).value.isString(),
            "true division of a flexible size gives a float; use // for shape arithmetic");
    }
    cx.add_symbolic(out, {sym_arith(cx.sym_int(node->input(0)), '/', cx.sym_int(node->input(1)))});
    return true;
  }
  if (kind == sym("aten::mul")) {
    cx.add_symbolic(out, {sym_arith(cx.sym_int(node->input(0)), '*', cx.sym_int(node->input(1)))});
    return true;
  }
  if (kind == sym("aten::add") && node->input(0)->type()->kind() == c10::TypeKind::ListType) {
    // [1] * (3 - x.dim()) + list(x.size()): torch.stft's (center=True) view
    // to 3-D, a list joined to a size list.
    std::vector<SymInt> items = cx.sym_int_list(node->input(0));
    const std::vector<SymInt> more = cx.sym_int_list(node->input(1));
    items.insert(items.end(), more.begin(), more.end());
    cx.add_symbolic(out, std::move(items));
    return true;
  }
  if (kind == sym("aten::add") || kind == sym("aten::sub")) {
    if (node->inputs().size() == 3) {
      check(cx.sym_int(node->input(2)).value == 1 && cx.sym_int(node->input(2)).is_constant(),
            "add/sub with alpha in shape arithmetic is not supported");
    }
    cx.add_symbolic(out,
                    {sym_arith(cx.sym_int(node->input(0)), kind == sym("aten::add") ? '+' : '-',
                               cx.sym_int(node->input(1)))});
    return true;
  }
  if (kind == sym("prim::ListConstruct")) {
    std::vector<SymInt> items;
    for (const Value* in : node->inputs()) items.push_back(cx.sym_int(in));
    cx.add_symbolic(out, std::move(items));
    return true;
  }
  if (kind == sym("prim::ListUnpack")) {
    std::vector<SymInt> items = cx.sym_int_list(node->input(0));
    check(items.size() == node->outputs().size(), "ListUnpack of a list of the wrong length");
    for (size_t i = 0; i < items.size(); ++i) cx.add_int(node->output(i), items[i]);
    return true;
  }
  // x.shape[i], x.shape[a:b] and len(x.shape) over a size list with load-time
  // items: the list's length is fixed, so the indices are plain numbers.
  if (kind == sym("aten::__getitem__") && cx.has_symbolic(node->input(0))) {
    const std::vector<SymInt> items = cx.sym_int_list(node->input(0));
    const auto n = static_cast<int64_t>(items.size());
    int64_t i = cx.constant_int(node->input(1));
    check(i >= -n && i < n,
          "index " + std::to_string(i) + " of a size list of length " + std::to_string(n));
    cx.add_int(out, items[static_cast<size_t>(i < 0 ? i + n : i)]);
    return true;
  }
  if (kind == sym("aten::len") && cx.has_symbolic(node->input(0))) {
    const auto n = static_cast<int64_t>(cx.sym_int_list(node->input(0)).size());
    cx.add_constant(out, out->type(), c10::IValue(n));
    return true;
  }
  if (kind == sym("aten::slice") && node->inputs().size() == 4 &&
      node->input(0)->type()->kind() == c10::TypeKind::ListType &&
      cx.has_symbolic(node->input(0))) {
    const std::vector<SymInt> items = cx.sym_int_list(node->input(0));
    const auto n = static_cast<int64_t>(items.size());
    const auto bound = [&](const Value* v, int64_t none) {
      if (cx.has_constant(v) && cx.constant(v).value.isNone()) return none;
      const int64_t b = cx.constant_int(v);
      return std::clamp(b < 0 ? b + n : b, int64_t{0}, n);
    };
    const int64_t start = bound(node->input(1), 0), end = bound(node->input(2), n);
    const int64_t step = cx.constant_int(node->input(3));
    check(step > 0, "a slice of a size list needs a positive step");
    std::vector<SymInt> picked;
    for (int64_t k = start; k < end; k += step) picked.push_back(items[static_cast<size_t>(k)]);
    cx.add_symbolic(out, std::move(picked));
    return true;
  }
  if (kind == sym("aten::format")) {
    // An f-string of a flexible size (torch._assert formats its message
    // before the check): only a message, of a raise the conversion decides,
    // so each load-time size is shown as "?".
    torch::jit::Stack stack;
    for (const Value* in : node->inputs()) {
      if (cx.has_constant(in)) {
        stack.push_back(cx.constant(in).value);
        continue;
      }
      check(cx.has_symbolic(in), "an f-string of a value known only when the model runs");
      std::string text;
      for (const SymInt& item : cx.sym_int_list(in)) {
        text += (text.empty() ? "" : ", ") +
                (item.is_constant() ? std::to_string(item.value) : std::string("?"));
      }
      const bool list = in->type()->kind() == c10::TypeKind::ListType;
      stack.emplace_back(list ? "[" + text + "]" : text);
    }
    run_operator(node, stack);
    cx.add_constant(out, out->type(), stack.back());
    return true;
  }
  for (const char* cmp : {"aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge"}) {
    // Decided where it holds for every size or for none (EfficientNet-PyTorch's
    // `if pad_h > 0 or pad_w > 0` of "same" padding).
    if (kind != sym(cmp) || node->inputs().size() != 2 || !out ||
        out->type()->kind() != c10::TypeKind::BoolType ||
        node->input(0)->type()->kind() != c10::TypeKind::IntType ||
        node->input(1)->type()->kind() != c10::TypeKind::IntType) {
      continue;
    }
    const std::optional<bool> always =
        decide_for_every_size(cx.sym_int(node->input(0)), cmp, cx.sym_int(node->input(1)));
    if (always) {
      cx.add_constant(out, out->type(), c10::IValue(*always));
      return true;
    }
  }
  for (const char* cmp : {"aten::eq", "aten::ne", "aten::lt", "aten::le", "aten::gt", "aten::ge",
                          "aten::__contains__"}) {
    check(kind != sym(cmp),
          "this compares a size known only when the model runs (a flexible dim of --input), "
          "so the condition cannot be decided during conversion; NNAPI below feature level 4 "
          "has no control flow. Give that dim a fixed size in --input");
  }
  // Consumers (view, reshape) read symbolic inputs themselves.
  return false;
}

}  // namespace nnapi_convert
