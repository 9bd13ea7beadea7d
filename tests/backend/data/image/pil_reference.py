"""PIL oracle for tests/backend/data/image: what OpenFlamingo's Python gets.

Usage: pil_reference.py SKIMAGE_DATA_DIR WORK_DIR

1. Writes derived inputs (JPEG re-encodes, odd sizes, alpha, 16-bit, EXIF,
   CMYK, WebP) into WORK_DIR/inputs/, next to what the C++ test put there.
2. For every file in WORK_DIR/inputs/ (and the listed skimage photographs):
   Image.open(...).convert("RGB") -> NAME.rgb (raw uint8 HWC), then open_clip's
   own preprocessing (open_clip.transform.image_transform, the pinned
   open-clip-torch; see reference_transform) for each (resize, crop) in
   SIZES -> NAME.R_C.f32 (raw CHW).
3. WORK_DIR/manifest.txt: "NAME PATH WIDTH HEIGHT" or "NAME PATH ERROR".
"""
import io
import os
import struct
import sys
import zlib

import numpy as np
import torchvision.transforms as T
from open_clip.transform import image_transform
from PIL import Image

MEAN = (0.48145466, 0.4578275, 0.40821073)
STD = (0.26862954, 0.26130258, 0.27577711)
SIZES = [(224, 224), (32, 32), (16, 32)]  # the last one pads the crop
PHOTOS = ["astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg", "retina.jpg",
          "hubble_deep_field.jpg", "motorcycle_left.png", "camera.png", "logo.png",
          "green_palette.png", "palette_color.png", "foo3x5x4indexed.png", "palette_gray.png"]


def reference_transform(resize, crop):
    """open_clip's own eval transform (what create_model_and_transforms returns
    third and OpenFlamingo hands to preprocess_image) where resize == crop;
    for resize != crop, which open_clip never builds, the same torchvision
    classes it composes (Resize(BICUBIC), CenterCrop with its zero padding,
    ToTensor, Normalize)."""
    if resize == crop:
        return image_transform(crop, is_train=False, mean=MEAN, std=STD)
    return T.Compose([T.Resize(resize, interpolation=T.InterpolationMode.BICUBIC), T.CenterCrop(crop),
                      T.ToTensor(), T.Normalize(mean=MEAN, std=STD)])


def png_chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png16(arr, color_type):  # PIL cannot write these, so build the file by hand
    h, w = arr.shape[:2]
    raw = b"".join(b"\0" + arr[y].astype(">u2").tobytes() for y in range(h))
    ihdr = struct.pack(">IIBBBBB", w, h, 16, color_type, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", zlib.compress(raw))
            + png_chunk(b"IEND", b""))


def make_inputs(data, out):
    def save(name, img, fmt, **kw):
        img.save(os.path.join(out, name), fmt, **kw)

    astro = Image.open(os.path.join(data, "astronaut.png")).convert("RGB")
    save("chelsea_q95_444.jpg", Image.open(os.path.join(data, "chelsea.png")), "JPEG", quality=95, subsampling=0)
    save("coffee_q75_422.jpg", Image.open(os.path.join(data, "coffee.png")), "JPEG", quality=75, subsampling=1)
    save("astronaut_q50_420.jpg", astro, "JPEG", quality=50, subsampling=2)
    save("motorcycle_q90_progressive.jpg", Image.open(os.path.join(data, "motorcycle_left.png")), "JPEG",
         quality=90, progressive=True)
    save("camera_gray_q85.jpg", Image.open(os.path.join(data, "camera.png")), "JPEG", quality=85)
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW" that PIL (and so we) must ignore
    save("astronaut_exif_rotated.jpg", astro.crop((0, 0, 300, 200)), "JPEG", quality=90, exif=exif.tobytes())
    save("astronaut_cmyk.jpg", astro.convert("CMYK"), "JPEG", quality=95)
    save("astronaut.webp", astro.crop((10, 20, 310, 220)), "WEBP", quality=80)
    save("astronaut_lossless.webp", astro.crop((0, 0, 64, 48)), "WEBP", lossless=True)
    save("astronaut.bmp", astro.crop((3, 5, 103, 65)), "BMP")
    rgba = astro.copy()
    rgba.putalpha(Image.linear_gradient("L").resize(astro.size))
    save("astronaut_rgba.png", rgba, "PNG")
    save("astronaut_la.png", rgba.convert("LA"), "PNG")
    for w, h in [(1, 7), (7, 1), (5, 3), (3, 2000), (20, 20), (1000, 40), (30, 900), (224, 224), (224, 300),
                 (300, 224), (225, 224), (224, 227), (33, 32), (511, 224)]:
        save(f"size_{w}x{h}.png", astro.resize((w, h), Image.NEAREST), "PNG")
    rng = np.random.default_rng(0)
    gray16 = rng.integers(0, 65536, (37, 53)).astype(np.uint16)
    gray16[:5] = rng.integers(0, 300, (5, 53))  # some values under the clamp
    with open(os.path.join(out, "gray16.png"), "wb") as f:
        f.write(png16(gray16, 0))
    with open(os.path.join(out, "rgb16.png"), "wb") as f:
        f.write(png16(rng.integers(0, 65536, (41, 29, 3)), 2))
    with open(os.path.join(out, "gray_alpha16.png"), "wb") as f:
        f.write(png16(rng.integers(0, 65536, (19, 23, 2)), 4))


def main():
    data, work = sys.argv[1], sys.argv[2]
    inputs = os.path.join(work, "inputs")
    make_inputs(data, inputs)
    files = [(n, os.path.join(data, n)) for n in PHOTOS]
    files += [(n, os.path.join(inputs, n)) for n in sorted(os.listdir(inputs))]
    transforms = {(r, c): reference_transform(r, c) for r, c in SIZES}
    lines = []
    for name, path in files:
        try:
            img = Image.open(path).convert("RGB")
        except Exception:  # noqa: BLE001 -- the C++ side must refuse it too
            lines.append(f"{name} {path} ERROR")
            continue
        base = os.path.join(work, name)
        np.array(img, dtype=np.uint8).tofile(base + ".rgb")
        for r, c in SIZES:
            transforms[(r, c)](img).numpy().astype("<f4").tofile(f"{base}.{r}_{c}.f32")
        lines.append(f"{name} {path} {img.size[0]} {img.size[1]}")
    with open(os.path.join(work, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
