"""Probe: the OpenCV image path. PNGs are written here with zlib (an encoder independent of
MXNet and OpenCV), decoded by mx.image.imdecode and compared pixel by pixel.

usage: probe_opencv.py rgb|gray|imresize|transforms
"""
import struct
import sys
import zlib

from probe_common import run

W, H = 37, 23  # odd sizes: a row-stride or channel-order bug cannot hide


def pixels(channels: int) -> list:
    """Deterministic, non-symmetric pixels: rows of [r, g, b] (or [v]) ints."""
    rows = []
    for y in range(H):
        row = []
        for x in range(W):
            r, g, b = (x * 7 + y * 3) % 256, (x * y + 11) % 256, (255 - x * 5 + y) % 256
            row.append([r, g, b] if channels == 3 else [(r ^ g) % 256])
        rows.append(row)
    return rows


def png(rows, channels: int) -> bytes:
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    color_type = 2 if channels == 3 else 0
    raw = b"".join(b"\x00" + bytes(v for px in row for v in px) for row in rows)  # filter 0 per row
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, color_type, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def decode(mx, channels):
    rows = pixels(channels)
    img = mx.image.imdecode(png(rows, channels), flag=1 if channels == 3 else 0, to_rgb=1)
    return rows, img.asnumpy()


def compare(result, rows, got, channels):
    import numpy as np
    want = np.array(rows, dtype=np.uint8).reshape(H, W, channels)
    result["shape"] = list(got.shape)
    result["dtype"] = str(got.dtype)
    if got.shape != want.shape:
        result["error"] = f"decoded shape {got.shape}, expected {want.shape}"
        return
    diff = np.argwhere(got != want)
    result["mismatches"] = int(len(diff))
    if len(diff):
        y, x, c = diff[0]
        result["error"] = (f"{len(diff)} pixel values differ; first at (y={y}, x={x}, c={c}): "
                           f"decoded {int(got[y, x, c])}, written {int(want[y, x, c])}")
        return
    result["ok"] = True


def main(mx, result):
    import numpy as np
    check = sys.argv[1]
    result["check"] = check
    if check == "rgb":
        rows, got = decode(mx, 3)
        compare(result, rows, got, 3)
    elif check == "gray":
        rows, got = decode(mx, 1)
        compare(result, rows, got, 1)
    elif check == "imresize":
        _, img = decode(mx, 3)
        src = mx.image.imdecode(png(pixels(3), 3))
        out = mx.image.imresize(src, 16, 12).asnumpy()  # w=16, h=12
        result["shape"] = list(out.shape)
        if out.shape != (12, 16, 3) or out.dtype != np.uint8:
            result["error"] = f"imresize to 16x12 gave shape {out.shape} dtype {out.dtype}, expected (12, 16, 3) uint8"
            return
        # Bilinear resampling keeps each channel's mean close to the source's.
        drift = float(np.abs(out.reshape(-1, 3).mean(0) - img.reshape(-1, 3).mean(0)).max())
        result["mean_drift"] = drift
        result["ok"] = drift < 12.0
        if not result["ok"]:
            result["error"] = f"resized image's channel means drift by {drift:.1f} from the source's"
    elif check == "transforms":
        from mxnet.gluon.data.vision import transforms
        src = mx.image.imdecode(png(pixels(3), 3))
        resized = transforms.Resize((16, 12))(src)  # (width, height)
        tensor = transforms.ToTensor()(resized)
        r, t = resized.asnumpy(), tensor.asnumpy()
        result["resize_shape"], result["tensor_shape"] = list(r.shape), list(t.shape)
        if r.shape != (12, 16, 3):
            result["error"] = f"Resize((16, 12)) gave shape {r.shape}, expected (12, 16, 3)"
            return
        if t.shape != (3, 12, 16) or t.dtype != np.float32:
            result["error"] = f"ToTensor gave {t.shape} {t.dtype}, expected (3, 12, 16) float32"
            return
        want = r.transpose(2, 0, 1).astype(np.float32) / 255.0
        err = float(np.abs(t - want).max())
        result["max_error"] = err
        result["ok"] = err <= 1e-6
        if not result["ok"]:
            result["error"] = f"ToTensor differs from HWC->CHW/255 by {err}"
    else:
        raise SystemExit(f"unknown check {check}")


if __name__ == "__main__":
    run(main, "opencv")
