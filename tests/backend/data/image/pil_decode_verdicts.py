"""PIL's verdict on every *.jpg in a directory: NAME.rgb (convert("RGB") bytes,
then width and height as text in NAME.size) or NAME.err (the exception)."""
import os
import sys

from PIL import Image

directory = sys.argv[1]
for name in sorted(os.listdir(directory)):
    if not name.endswith(".jpg"):
        continue
    stem = os.path.join(directory, name[:-4])
    try:
        with Image.open(os.path.join(directory, name)) as im:
            rgb = im.convert("RGB")
        with open(stem + ".rgb", "wb") as f:
            f.write(rgb.tobytes())
        with open(stem + ".size", "w") as f:
            f.write("%d %d\n" % rgb.size)
    except Exception as e:  # noqa: BLE001 - any refusal is the verdict
        with open(stem + ".err", "w") as f:
            f.write(repr(e))
