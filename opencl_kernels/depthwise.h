/* Dialect-neutral helper of the depthwise convolution kernels (conv_depthwise_vector.cl, and gemm.cl
 * computing one in front of a GEMM; appended to either prelude after pooling.h). */
/* One filter row ky of a depthwise convolution over PX consecutive output pixels of one image row,
 * VW channels (block cb of CB) as FLOATV: the RW input columns under the pixels are loaded once and
 * shared by the KW taps, each adding into acc[0 .. PX-1].  in: the NHWC float input, rbase the index of
 * the input row's first pixel ((n * H + iy) * W), x0 the first input column; MASKED (the tile reaches
 * past the image): column t is col[t] and reads 0 unless col_ok[t] (both computed once by the caller),
 * else x0 + t (unit stride).  w: [KH][KW][CB * VW]; SW / DLW: stride and dilation along x. */
#define DEPTHWISE_ROW_TAPS(VW, CB, RW, KW, SW, DLW, PX, in, w, rbase, x0, col, col_ok, cb, ky, acc, MASKED) { \
        FLOATV(VW) xr_[RW]; \
        _Pragma("unroll") for (int t_ = 0; t_ < (RW); ++t_) { \
            const FLOATV(VW) v_ = FLOATV_LOAD(VW, in, ((rbase) + ((MASKED) ? (col)[t_] : (x0) + t_)) * (CB) + (cb)); \
            xr_[t_] = !(MASKED) || (col_ok)[t_] ? v_ : FLOATV_SPLAT(VW, 0.0f); \
        } \
        _Pragma("unroll") for (int kx_ = 0; kx_ < (KW); ++kx_) { \
            const FLOATV(VW) wv_ = FLOATV_LOAD(VW, w, ((ky) * (KW) + kx_) * (CB) + (cb)); \
            _Pragma("unroll") for (int p_ = 0; p_ < (PX); ++p_) (acc)[p_] += xr_[p_ * (SW) + kx_ * (DLW)] * wv_; \
        } \
    }
