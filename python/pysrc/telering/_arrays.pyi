import os
from typing import Any, Optional, Union

import numpy

EVENT_SIZE: int

def event_dtype() -> "numpy.dtype[Any]": ...
def from_buffer(buf: bytearray, count: int) -> "numpy.ndarray[Any, Any]": ...
def read_numpy(
    path: Union[str, "os.PathLike[str]"], max: Optional[int] = None, version: Optional[int] = None
) -> "numpy.ndarray[Any, Any]": ...
def load(
    source: Union[str, "os.PathLike[str]", "numpy.ndarray[Any, Any]"],
    max: Optional[int] = None,
    version: Optional[int] = None,
) -> Any: ...
