/* tensor.c - element access for inline tensors: reading and writing one
 * element as a number, and the f16 / bf16 conversions that needs. */
#include <math.h>
#include <string.h>
#include "ir.h"

static uint16_t f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000, exp = (x >> 23) & 0xff, man = x & 0x7fffff;
	if (exp == 0xff)
		return (uint16_t)(sign | 0x7c00 | (man ? 0x200 | (man >> 13) : 0));
	int e = (int)exp - 127 + 15;
	if (e >= 0x1f)
		return (uint16_t)(sign | 0x7c00);
	if (e <= 0) {                       /* subnormal or zero, round to nearest even */
		if (e < -10)
			return (uint16_t)sign;
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - e), h = man >> shift, rem = man & ((1u << shift) - 1);
		uint32_t half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	uint32_t h = ((uint32_t)e << 10) | (man >> 13), rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;                            /* may carry into the exponent: still right */
	return (uint16_t)(sign | h);
}

static float f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, x;
	if (exp == 0x1f)
		x = sign | 0x7f800000 | (man << 13);
	else if (exp)
		x = sign | ((exp - 15 + 127) << 23) | (man << 13);
	else if (!man)
		x = sign;
	else {                              /* subnormal: normalise */
		int e = -1;
		do { man <<= 1; e++; } while (!(man & 0x400));
		x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
	}
	float f;
	memcpy(&f, &x, 4);
	return f;
}

static uint16_t f32_to_bf16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((x >> 16) | 0x40);
	x += 0x7fff + ((x >> 16) & 1);
	return (uint16_t)(x >> 16);
}

static float bf16_to_f32(uint16_t b)
{
	uint32_t x = (uint32_t)b << 16;
	float f;
	memcpy(&f, &x, 4);
	return f;
}

int dtype_is_float(DType t) { return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16; }

int dtype_is_int(DType t)
{
	return t == DT_I8 || t == DT_I16 || t == DT_I32 || t == DT_I64 || t == DT_U8 || t == DT_U16 ||
	       t == DT_U32 || t == DT_U64 || t == DT_BOOL;
}

/* Writes element i; returns 0 if the number does not fit the dtype. */
int tensor_put(DType t, uint8_t *d, size_t i, double f, int64_t v, int is_int)
{
	double x = is_int ? (double)v : f;
	union { int8_t i8; int16_t i16; int32_t i32; int64_t i64; uint16_t u16; uint32_t u32; uint64_t u64; float f32; double f64; } u;
	size_t sz = (size_t)dtype_bits(t) / 8;
	if (dtype_is_int(t) && !is_int)
		return 0;
	switch (t) {
	case DT_F32: u.f32 = (float)x; break;
	case DT_F64: u.f64 = x; break;
	case DT_F16: u.u16 = f32_to_f16((float)x); break;
	case DT_BF16: u.u16 = f32_to_bf16((float)x); break;
	case DT_BOOL: if (v != 0 && v != 1) return 0; u.i8 = (int8_t)v; break;
	case DT_I8: if (v < INT8_MIN || v > INT8_MAX) return 0; u.i8 = (int8_t)v; break;
	case DT_U8: if (v < 0 || v > UINT8_MAX) return 0; u.i8 = (int8_t)(uint8_t)v; break;
	case DT_I16: if (v < INT16_MIN || v > INT16_MAX) return 0; u.i16 = (int16_t)v; break;
	case DT_U16: if (v < 0 || v > UINT16_MAX) return 0; u.u16 = (uint16_t)v; break;
	case DT_I32: if (v < INT32_MIN || v > INT32_MAX) return 0; u.i32 = (int32_t)v; break;
	case DT_U32: if (v < 0 || v > (int64_t)UINT32_MAX) return 0; u.u32 = (uint32_t)v; break;
	case DT_I64: u.i64 = v; break;
	case DT_U64: if (v < 0) return 0; u.u64 = (uint64_t)v; break;
	default: return 0;
	}
	memcpy(d + i * sz, &u, sz);
	return 1;
}

/* Reads element i as a double (float dtypes) or an int64 (the others). */
double tensor_get_f(DType t, const uint8_t *d, size_t i)
{
	float f;
	double g;
	uint16_t h;
	switch (t) {
	case DT_F32: memcpy(&f, d + 4 * i, 4); return f;
	case DT_F64: memcpy(&g, d + 8 * i, 8); return g;
	case DT_F16: memcpy(&h, d + 2 * i, 2); return f16_to_f32(h);
	case DT_BF16: memcpy(&h, d + 2 * i, 2); return bf16_to_f32(h);
	default: return (double)tensor_get_i(t, d, i);
	}
}

int64_t tensor_get_i(DType t, const uint8_t *d, size_t i)
{
	int8_t a; int16_t b; int32_t c; int64_t e; uint16_t ub; uint32_t uc; uint64_t ue;
	switch (t) {
	case DT_BOOL: case DT_U8: return d[i];
	case DT_I8: memcpy(&a, d + i, 1); return a;
	case DT_I16: memcpy(&b, d + 2 * i, 2); return b;
	case DT_U16: memcpy(&ub, d + 2 * i, 2); return ub;
	case DT_I32: memcpy(&c, d + 4 * i, 4); return c;
	case DT_U32: memcpy(&uc, d + 4 * i, 4); return uc;
	case DT_I64: memcpy(&e, d + 8 * i, 8); return e;
	case DT_U64: memcpy(&ue, d + 8 * i, 8); return (int64_t)ue;
	default: return 0;
	}
}

size_t tensor_nbytes(DType t, int64_t numel)
{
	int64_t r;
	if (numel < 0 || dtype_nbytes(t, numel, &r) != OK)
		ONNXC_BUG("tensor_nbytes: %lld elements of %s", (long long)numel, dtype_name(t));
	return (size_t)r;
}
