"""Channel groups: the sets of channels that must be removed together.

A *space* is one set of channel indices shared by several tensors: a convolution's output
channels, the BatchNorm after it, the next convolution's input channels, and every other tensor
joined to them by a residual addition. Tracing (trace.py) creates a space for each layer output
and joins spaces (union-find) where the graph couples them; a *group* is what is left after the
joins: one root space with every place (`Member`) its channels index a weight.

Each member says which weights it slices and how:
- ``out``:       a producer's output rows (Conv weight[c], bias[c]; Linear weight[c], bias[c]);
- ``in``:        a consumer's input columns, at ``offset`` into its input (a concatenation puts
                 several spaces side by side), each channel ``repeat`` columns wide (a
                 flattened C×H×W map feeds H·W columns per channel);
- ``norm``:      a normalisation's per-channel parameters (and BatchNorm's running statistics);
- ``depthwise``: a depthwise convolution, whose channels are its input's;
- ``embed``:     an embedding's columns;
- ``heads``:     attention heads (attention.py), each ``repeat`` (the head dimension) wide;
- ``tensor``:    a parameter the model uses directly (a position embedding added to the
                 channels): its ``attr`` of ``module`` on dimension ``dim``.
"""
from dataclasses import dataclass, field


class PruneError(ValueError):
    """A model, a layer or an argument that pruning cannot handle; the message names it."""


@dataclass
class Member:
    module_name: str
    module: object
    role: str  # out | in | norm | depthwise | embed | heads | attn_in | attn_out | tensor
    offset: int = 0
    repeat: int = 1
    attr: str = ""  # role "tensor": the parameter's attribute name
    dim: int = 0    # role "tensor": the dimension its channels are on


@dataclass
class Space:
    id: int
    size: int
    parent: int
    members: list = field(default_factory=list)
    frozen: list = field(default_factory=list)  # reasons this space may not be pruned


class Spaces:
    """Union-find over channel spaces."""

    def __init__(self):
        self._spaces = []

    def new(self, size, member=None):
        space = Space(id=len(self._spaces), size=int(size), parent=len(self._spaces))
        self._spaces.append(space)
        if member is not None:
            space.members.append(member)
        return space.id

    def find(self, sid):
        root = sid
        while self._spaces[root].parent != root:
            root = self._spaces[root].parent
        while self._spaces[sid].parent != root:  # path compression
            self._spaces[sid].parent, sid = root, self._spaces[sid].parent
        return root

    def get(self, sid):
        return self._spaces[self.find(sid)]

    def union(self, a, b, where):
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return ra
        sa, sb = self._spaces[ra], self._spaces[rb]
        if sa.size != sb.size:
            raise PruneError(f"{where}: joins {sa.size} channels with {sb.size}")
        sb.parent = ra
        sa.members += sb.members
        sa.frozen += sb.frozen
        sb.members, sb.frozen = [], []
        return ra

    def add_member(self, sid, member):
        self.get(sid).members.append(member)

    def freeze(self, sid, reason):
        self.get(sid).frozen.append(reason)

    def roots(self):
        return [s for s in self._spaces if s.parent == s.id]


@dataclass(frozen=True)
class Channels:
    """Which channels of a traced tensor belong to which spaces: the tensor's dimension ``dim``
    is the concatenation of ``segments``, each ``(space_id, repeat)`` (space_id None: a block of
    ``repeat`` channels that belongs to no space, such as a concatenated input image)."""
    dim: int
    segments: tuple

    def space_ids(self):
        return [sid for sid, _ in self.segments if sid is not None]


@dataclass
class Group:
    """One set of channels pruned together, as found in a model: its size, its members, why it
    is frozen (empty: it is pruned), and after planning which channels are kept."""
    size: int
    members: list
    frozen: list
    keep: list = None

    def describe(self):
        names = sorted({f"{m.module_name}.{m.role}" for m in self.members})
        return f"{self.size} channels: " + ", ".join(names[:6]) + (" …" if len(names) > 6 else "")
