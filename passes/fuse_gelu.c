/* fuse_gelu.c - GELU written out op by op becomes onnx::Gelu (opset >= 20).
 *
 *   0.5 · x · (1 + Erf(x · 0.70710678))                    -> Gelu(x)
 *   0.5 · x · (1 + Tanh(0.79788456 · (x + 0.044715 · x³))) -> Gelu(x, approximate="tanh")
 *
 * The product is a Mul of three factors, grouped either way (one operand
 * of the last Mul is itself a Mul read nowhere else); x / 1.41421356 stands
 * for x · 0.70710678, x³ is Pow(x, 3), Mul(Mul(x, x), x) or Mul(x, Mul(x,
 * x)), and every Mul and Add takes its operands in either order.  The
 * constants are one-element floating constants within 1e-6 of those values
 * (a model writes math.sqrt(2 / math.pi) and rounds it to f32).  Legal when
 * x is floating and the result's type is x's (the scalars broadcast
 * nothing).  Below opset 20 decompose writes aten::gelu in exactly this
 * form and nothing is fused; from opset 20 on it writes Gelu itself, so
 * this catches the formulas models spell by hand (GPT-2's new_gelu).  The
 * Gelu replaces the last Mul in place (result, name, scope, location);
 * the absorbed nodes are left for dce. */
#include "fuse.h"

static const double SQRT1_2 = 0.7071067811865476, SQRT2 = 1.4142135623730951;

/* v = Mul(a, b) or Mul(b, a) with b a scalar constant near c: a. */
static ValueId times_const(const Fuse *f, ValueId v, double c)
{
	Node *m = match_op(f->m, v, OP_ONNX_Mul);
	for (uint32_t side = 0; m && side < 2; side++)
		if (fuse_scalar_near(f, operand(m, 1 - side), c))
			return operand(m, side);
	Node *d = c == SQRT1_2 ? match_op(f->m, v, OP_ONNX_Div) : NULL;
	return d && fuse_scalar_near(f, operand(d, 1), SQRT2) ? operand(d, 0) : VNONE;
}

/* v = x³. */
static int is_cube(const Fuse *f, ValueId v, ValueId x)
{
	Node *p = match_op(f->m, v, OP_ONNX_Pow);
	if (p)
		return operand(p, 0) == x && fuse_scalar_near(f, operand(p, 1), 3.0);
	Node *m = match_op(f->m, v, OP_ONNX_Mul);
	for (uint32_t side = 0; m && side < 2; side++) {
		Node *sq = match_operand(f->m, m, side, OP_ONNX_Mul);
		if (operand(m, 1 - side) == x && sq && operand(sq, 0) == x && operand(sq, 1) == x)
			return 1;
	}
	return 0;
}

/* v = 1 + Erf(x/√2) (1: exact form) or 1 + Tanh(√(2/π)(x + 0.044715 x³))
 * (2: tanh form), each read only there; else 0. */
static int gelu_kind(const Fuse *f, ValueId v, ValueId x)
{
	Node *add = match_op(f->m, v, OP_ONNX_Add);
	for (uint32_t side = 0; add && fuse_one_use(f, v) && side < 2; side++) {
		ValueId g = operand(add, side);
		if (!fuse_scalar_near(f, operand(add, 1 - side), 1.0) || !fuse_one_use(f, g))
			continue;
		Node *e = match_op(f->m, g, OP_ONNX_Erf);
		if (e && times_const(f, operand(e, 0), SQRT1_2) == x)
			return 1;
		Node *t = match_op(f->m, g, OP_ONNX_Tanh);
		Node *u = t ? match_op(f->m, times_const(f, operand(t, 0), 0.7978845608028654), OP_ONNX_Add) : NULL;
		for (uint32_t s = 0; u && s < 2; s++)
			if (operand(u, s) == x && is_cube(f, times_const(f, operand(u, 1 - s), 0.044715), x))
				return 2;
	}
	return 0;
}

int fuse_gelu_form(const Fuse *f, const Node *n, ValueId *x, ValueId *inner)
{
	/* The three factors: n's operands, one of them opened if it is a Mul. */
	for (uint32_t side = 0; side < 2; side++) {
		Node *in = match_operand(f->m, n, side, OP_ONNX_Mul);
		if (!in || !fuse_one_use(f, in->res[0]))
			continue;
		ValueId fac[3] = { operand(in, 0), operand(in, 1), operand(n, 1 - side) };
		for (int h = 0; h < 3; h++) {
			if (!fuse_scalar_near(f, fac[h], 0.5))
				continue;
			for (int i = 0; i < 3; i++) {
				if (i == h)
					continue;
				const Type *tx = val(f->m, fac[i])->type;
				int kind = tx && tx->kind == TY_TENSOR && dtype_is_float((DType)tx->dtype) &&
					   type_equal(tx, val(f->m, n->res[0])->type)
						   ? gelu_kind(f, fac[3 - h - i], fac[i])
						   : 0;
				if (kind) {
					*x = fac[i];
					*inner = in->res[0];
					return kind;
				}
			}
		}
	}
	return 0;
}

void fuse_gelu(Fuse *f, Node *n)
{
	ValueId x, inner;
	int kind = f->opset >= 20 ? fuse_gelu_form(f, n, &x, &inner) : 0;
	if (!kind)
		return;
	f->uses[inner]--;
	fuse_set_op(f, n, OP_ONNX_Gelu, 1, kind == 2);
	n->args[0] = fuse_value_arg(x);
	if (kind == 2)
		n->kw[0] = (Named){ sym_cstr("approximate"), { .kind = A_STR, .u.s = { "tanh", 4 } } };
}
