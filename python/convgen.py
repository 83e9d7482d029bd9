"""convgen.py — run a convgen network from Python, through libconvgen's C API
(runtime/convgen.h) with ctypes; nothing to compile.

    import numpy as np, convgen
    with convgen.Net("net.cgb", backend="cuda") as net:      # a bundle, or a spec .yaml
        pred, scores = net.run(images)                       # NumPy uint8 or float32
        pred_t, scores_t = net.run_torch(x_cuda)             # a PyTorch CUDA tensor, in place

Images are N x C x H x W, C x H x W equal to the network's input
(net.input_shape; nothing is resized here). A one-channel network also takes
N x H x W, and one image alone as H x W; a network of C > 1 channels takes one
image alone as C x H x W (so net.run(x[0]) classifies x's first image). uint8 pixels are
scaled by the network as its spec says (net.scaling: x = pixel * scale +
offset); float32 values are taken as the network's input, already scaled.

The library is found as $CONVGEN_LIB, else libconvgen.so.* in this file's
own folder, else in the lib/ folder of the prefix this file is installed under
(`make install PREFIX=P` puts this file in P/lib/python3/dist-packages and the
library in P/lib; `pip install ./python` into a prefix P puts this file in
P/lib/pythonX.Y/site-packages), else libconvgen.so.0 on the loader's path
(LD_LIBRARY_PATH, or a system prefix), else build/libconvgen.so.* beside this
file's parent (the source tree).

Errors raise convgen.Error with the library's one-line message; its .status
is the cg_status (2 usage, 3 bad input, 4 GPU, 5 I/O, 6 unsupported).
A Net is not to be used by two threads at once (the C API's rule).
"""
import ctypes
import glob
import os

__all__ = ["Net", "Error", "version"]

_lib = None


class Error(Exception):
    """A failed libconvgen call: the message, and the cg_status as .status."""

    def __init__(self, message, status):
        super().__init__(message)
        self.status = status


class _Options(ctypes.Structure):
    # cg_net_options, in the header's order; _reserved leaves room for fields
    # later versions add at the end (cg_net_options_init fills them)
    _fields_ = [("backend", ctypes.c_int), ("device", ctypes.c_int),
                ("fatbin", ctypes.c_char_p), ("tuning", ctypes.c_char_p),
                ("no_tuning", ctypes.c_int), ("no_cache", ctypes.c_int),
                ("streams", ctypes.c_int), ("batch", ctypes.c_longlong),
                ("profile", ctypes.c_int), ("poison", ctypes.c_int),
                ("weights_seed", ctypes.c_longlong), ("no_graphs", ctypes.c_int),
                ("no_pdl", ctypes.c_int), ("keep_tensors", ctypes.c_int),
                ("whole", ctypes.c_int), ("pdl_always", ctypes.c_int),
                ("_reserved", ctypes.c_char * 252)]


class _Input(ctypes.Structure):
    # cg_input
    _fields_ = [("type", ctypes.c_int), ("n", ctypes.c_longlong), ("c", ctypes.c_int),
                ("h", ctypes.c_int), ("w", ctypes.c_int), ("data", ctypes.c_void_p)]


_U8, _F32 = 0, 1
_BACKENDS = {"cpu": 0, "cuda": 1}


def _load():
    """libconvgen, loaded once, with every function's argument types declared."""
    global _lib
    if _lib is not None:
        return _lib
    tries = [os.environ.get("CONVGEN_LIB")]
    for d in _lib_dirs():
        for stem in ("libconvgen.so.0", "libconvgen-rt.so.0"):
            if os.path.exists(os.path.join(d, stem)):
                tries.append(os.path.join(d, stem))
    # the full library first, then the runtime-only one (bundles alone, no
    # liblua or libyaml needed at run time): on the loader's path, then built in the tree
    tries += ["libconvgen.so.0", "libconvgen-rt.so.0"]
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for stem in ("libconvgen.so.", "libconvgen-rt.so."):
        tries += sorted(glob.glob(os.path.join(here, "build", stem + "*")))
    errors = []
    for name in [t for t in tries if t]:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise OSError("libconvgen not found (set CONVGEN_LIB, or LD_LIBRARY_PATH to the installed lib/): "
                      + "; ".join(errors))
    P, I = ctypes.c_void_p, ctypes.c_int
    sigs = {
        "cg_version": (ctypes.c_char_p, []),
        "cg_net_options_init": (None, [ctypes.POINTER(_Options)]),
        "cg_net_open": (I, [ctypes.c_char_p, ctypes.POINTER(_Options), ctypes.POINTER(P)]),
        "cg_net_open_bundle": (I, [ctypes.c_char_p, ctypes.POINTER(_Options), ctypes.POINTER(P)]),
        "cg_net_error": (ctypes.c_char_p, [P]),
        "cg_net_input_shape": (I, [P, ctypes.POINTER(I), ctypes.POINTER(I), ctypes.POINTER(I)]),
        "cg_net_input_scaling": (I, [P, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]),
        "cg_net_classes": (I, [P, ctypes.POINTER(I)]),
        "cg_net_backend": (ctypes.c_char_p, [P]),
        "cg_net_device_name": (ctypes.c_char_p, [P]),
        "cg_net_run": (I, [P, ctypes.POINTER(_Input), P, P]),
        "cg_net_run_device": (I, [P, ctypes.POINTER(_Input), P, P, P]),
        "cg_net_close": (None, [P]),
    }
    for fn, (res, args) in sigs.items():
        f = getattr(lib, fn)
        f.restype, f.argtypes = res, args
    _lib = lib
    return lib


def _lib_dirs():
    """Where an installed library may lie, nearest first: this file's folder,
    then the lib/ of each prefix above it (P/lib/python3/dist-packages/convgen.py
    or P/lib/pythonX.Y/site-packages/convgen.py: P/lib)."""
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [here]
    d = here
    for _ in range(4):
        d = os.path.dirname(d)
        if os.path.basename(d) == "lib" or os.path.basename(d) == "lib64":
            dirs.append(d)
    return dirs


def _image_shape(shape, input_shape):
    """(N, C, H, W) for an array of `shape`, read against the network's input
    (C, H, W): N x C x H x W as it is; a 3-d array is N x H x W for a
    one-channel network and one C x H x W image for a network of C > 1
    channels; a 2-d array is one H x W image of a one-channel network. Other
    shapes are a ValueError; sizes that differ from the input are left to the
    library to refuse (it names both shapes)."""
    c = input_shape[0]
    shape = tuple(int(v) for v in shape)
    if len(shape) == 4:
        return shape
    if len(shape) == 3 and c == 1:
        return (shape[0], 1, shape[1], shape[2])
    if len(shape) == 3:
        if shape != tuple(input_shape):
            raise ValueError("images must be N x C x H x W, or one image C x H x W = %s, got shape %s"
                             % ("x".join(map(str, input_shape)), shape))
        return (1,) + shape
    if len(shape) == 2 and c == 1:
        return (1, 1, shape[0], shape[1])
    raise ValueError("images must be N x %s (or N x H x W, H x W for one channel), got shape %s"
                     % ("x".join(map(str, input_shape)) if c > 1 else "C x H x W", shape))


def version():
    """The library's version, "MAJOR.MINOR.PATCH"."""
    return _load().cg_version().decode()


def _is_bundle(path):
    if path.endswith(".cgb"):
        return True
    try:
        with open(path, "rb") as f:
            return f.read(8) == b"\x89CGB\r\n\x1a\n"
    except OSError:
        return False


class Net:
    """A network opened from a bundle (NET.cgb) or a spec (.yaml) on the CPU
    reference or CUDA device `device`."""

    def __init__(self, path, backend="cpu", device=0):
        lib = _load()
        if backend not in _BACKENDS:
            raise ValueError("backend must be 'cpu' or 'cuda', got %r" % (backend,))
        o = _Options()
        lib.cg_net_options_init(ctypes.byref(o))
        o.backend, o.device = _BACKENDS[backend], int(device)
        self._net = ctypes.c_void_p()
        opener = lib.cg_net_open_bundle if _is_bundle(path) else lib.cg_net_open
        st = opener(os.fsencode(path), ctypes.byref(o), ctypes.byref(self._net))
        if st:
            msg = lib.cg_net_error(self._net).decode(errors="replace")
            lib.cg_net_close(self._net)
            self._net = None
            raise Error(msg, st)
        c, h, w, k = ctypes.c_int(), ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        scale, offset = ctypes.c_double(), ctypes.c_double()
        self._check(lib.cg_net_input_shape(self._net, ctypes.byref(c), ctypes.byref(h), ctypes.byref(w)))
        self._check(lib.cg_net_classes(self._net, ctypes.byref(k)))
        self._check(lib.cg_net_input_scaling(self._net, ctypes.byref(scale), ctypes.byref(offset)))
        self.input_shape = (c.value, h.value, w.value)
        self.classes = k.value
        self.scaling = (scale.value, offset.value)
        self.backend = lib.cg_net_backend(self._net).decode()
        self.device_name = lib.cg_net_device_name(self._net).decode(errors="replace")

    def _check(self, st):
        if st:
            raise Error(_lib.cg_net_error(self._net).decode(errors="replace"), st)

    def _input(self, shape, is_f32, ptr):
        """cg_input for an array of `shape` (see _image_shape); the API checks it."""
        n, c, h, w = _image_shape(shape, self.input_shape)
        return _Input(_F32 if is_f32 else _U8, n, c, h, w, ptr)

    def run(self, images):
        """Classify a NumPy array (uint8 or float32) in host memory; returns
        (predictions int32[N], scores float32[N, classes])."""
        import numpy as np
        a = np.asarray(images)
        if a.dtype not in (np.uint8, np.float32):
            raise TypeError("images must be uint8 or float32, got %s" % a.dtype)
        a = np.ascontiguousarray(a)
        n = _image_shape(a.shape, self.input_shape)[0]
        pred = np.empty(n, dtype=np.int32)
        scores = np.empty((n, self.classes), dtype=np.float32)
        inp = self._input(a.shape, a.dtype == np.float32, a.ctypes.data)
        self._check(_lib.cg_net_run(self._net, ctypes.byref(inp), pred.ctypes.data, scores.ctypes.data))
        return pred, scores

    def run_torch(self, x, pred=None, scores=None):
        """Classify a PyTorch CUDA tensor (uint8 or float32, contiguous, on this
        network's device) in place: the library reads x's memory and writes
        pred (int32[N]) and scores (float32[N, classes]) on the device, queued on
        PyTorch's current stream, so later work on that stream sees them. Returns
        (pred, scores), allocated when not given. CUDA backend only."""
        import torch
        if not x.is_cuda:
            raise ValueError("run_torch needs a CUDA tensor (use run() for host arrays)")
        if x.dtype not in (torch.uint8, torch.float32):
            raise TypeError("images must be uint8 or float32, got %s" % x.dtype)
        if not x.is_contiguous():
            raise ValueError("images must be contiguous (x.contiguous())")
        n = _image_shape(tuple(x.shape), self.input_shape)[0]
        if pred is None:
            pred = torch.empty(n, dtype=torch.int32, device=x.device)
        if scores is None:
            scores = torch.empty((n, self.classes), dtype=torch.float32, device=x.device)
        if pred.dtype != torch.int32 or scores.dtype != torch.float32 or pred.numel() != n \
                or scores.numel() != n * self.classes or not pred.is_contiguous() or not scores.is_contiguous():
            raise ValueError("pred must be int32[N] and scores float32[N, classes], contiguous")
        stream = torch.cuda.current_stream(x.device).cuda_stream
        inp = self._input(tuple(x.shape), x.dtype == torch.float32, x.data_ptr())
        self._check(_lib.cg_net_run_device(self._net, ctypes.byref(inp), pred.data_ptr(), scores.data_ptr(),
                                           ctypes.c_void_p(stream)))
        return pred, scores

    def close(self):
        """Free the network (device memory included); idempotent."""
        if self._net:
            _lib.cg_net_close(self._net)
            self._net = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
