"""The device side of activation sparsity: a matrix-vector product that reads only the weight
rows of the non-zero entries of x (TEAL's kernel idea), written in Triton.

    y = sparse_gemv(x, weight_t)     # x: (K,) on CUDA; weight_t: (K, N), W transposed, contiguous

Each program takes BLOCK_K entries of x and BLOCK_N outputs: the weight tile's load is masked
by x != 0, so a zero entry's row is never read (masked-off lanes issue no memory
transactions), and the partial sums of the K blocks are added with atomics. Batch-1 decoding is
bound by the weight bytes read, so the time falls with the zero fraction.

Triton is imported on first use: on a machine without it (Debian has no package; the CPU CI)
`available()` says why, and SparseLinear keeps to its CPU reference.
"""
import torch

BLOCK_N = 128
BLOCK_K = 32
_kernel = None


_triton = None  # whether Triton imports: tried once (a failed import is slow to repeat)


def available(device="cuda"):
    """(True, "") when the kernel can run on `device`, else (False, why). Cheap: layers ask
    on every call."""
    global _triton
    if not str(device).startswith("cuda") or not torch.cuda.is_available():
        return False, "the kernel runs on a CUDA device; none here"
    if _triton is None:
        try:
            import triton  # noqa: F401
            _triton = True
        except ImportError:
            _triton = False
    if not _triton:
        return False, "Triton is not installed (the GPU machine has it; Debian does not)"
    return True, ""


def _compile():
    global _kernel
    if _kernel is not None:
        return _kernel
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(x_ptr, wt_ptr, y_ptr, K, N, stride_k,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
        pid_n = tl.program_id(0)
        pid_k = tl.program_id(1)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + offs_k, mask=offs_k < K, other=0.0).to(tl.float32)
        nz = x != 0.0
        w = tl.load(wt_ptr + offs_k[:, None] * stride_k + offs_n[None, :],
                    mask=nz[:, None] & (offs_n[None, :] < N), other=0.0)
        acc = tl.sum(w.to(tl.float32) * x[:, None], axis=0)
        tl.atomic_add(y_ptr + offs_n, acc, mask=offs_n < N)

    _kernel = (kernel, triton.cdiv)
    return _kernel


def sparse_gemv(x, weight_t):
    """x (K,) @ weight_t (K, N) in float32, reading only the rows of weight_t where x != 0.
    REQUIRES: both on one CUDA device, weight_t contiguous."""
    kernel, cdiv = _compile()
    k, n = weight_t.shape
    if x.shape != (k,):
        raise ValueError(f"x is {tuple(x.shape)}, the weight takes ({k},)")
    x = x.contiguous()
    y = torch.zeros(n, dtype=torch.float32, device=x.device)
    grid = (cdiv(n, BLOCK_N), cdiv(k, BLOCK_K))
    kernel[grid](x, weight_t, y, k, n, weight_t.stride(0), BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K)
    return y
