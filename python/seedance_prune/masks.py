"""Masks kept equal across ranks (the article's 2.4, for real): pruning and skip masks as one
bit-packed, versioned buffer, broadcast with torch.distributed from a root rank when they
change, and checked before use, so a rank with a stale mask refuses to run instead of
computing something else than its peers.

    masks = MaskSet({"blocks": (8,), "mlp.0": (256,)})
    sync = MaskSync(masks, root=0)
    if rank == 0:
        masks.set("blocks", new_blocks)   # local change: version + 1
    sync.broadcast()                      # collective: every rank receives the root's masks
    sync.verify()                         # collective: raises StaleMasks on every rank if any
                                          # rank holds another version than the root
Works over gloo (CPU tensors) and NCCL (pass device="cuda"; one GPU per rank).
"""
import zlib

import torch
import torch.distributed as dist

_BIT_WEIGHTS = torch.tensor([128, 64, 32, 16, 8, 4, 2, 1], dtype=torch.uint8)


class StaleMasks(RuntimeError):
    """Ranks hold different mask versions; the message names them."""


class MaskSyncError(RuntimeError):
    """A collective of the mask sync failed (a rank died or timed out)."""


def pack_bits(mask):
    """A bool tensor as bytes, 8 flags per byte, most significant bit first."""
    flat = mask.detach().flatten().to(torch.uint8).cpu()
    flat = torch.cat([flat, flat.new_zeros((-len(flat)) % 8)])
    return (flat.view(-1, 8) * _BIT_WEIGHTS).sum(dim=1, dtype=torch.int32).to(torch.uint8)


def unpack_bits(packed, shape):
    n = 1
    for s in shape:
        n *= s
    bits = (packed.cpu().unsqueeze(1) & _BIT_WEIGHTS).ne(0).flatten()
    return bits[:n].view(shape)


class MaskSet:
    """Named boolean masks with fixed shapes and one version number for the set."""

    def __init__(self, shapes):
        self.shapes = {name: tuple(shape) for name, shape in shapes.items()}
        self.masks = {name: torch.ones(shape, dtype=torch.bool)
                      for name, shape in self.shapes.items()}
        self.version = 0

    def set(self, name, mask):
        if name not in self.shapes:
            raise KeyError(f"no mask named {name!r}; masks: {', '.join(self.shapes)}")
        mask = torch.as_tensor(mask).to(torch.bool).cpu()
        if tuple(mask.shape) != self.shapes[name]:
            raise ValueError(f"mask {name!r} has shape {self.shapes[name]}, not "
                             f"{tuple(mask.shape)}")
        if not torch.equal(mask, self.masks[name]):
            self.masks[name] = mask.clone()
            self.version += 1

    def __getitem__(self, name):
        return self.masks[name]

    def pack(self):
        return torch.cat([pack_bits(self.masks[n]) for n in self.shapes])

    def unpack(self, packed, version):
        at = 0
        for name, shape in self.shapes.items():
            n = 1
            for s in shape:
                n *= s
            size = (n + 7) // 8
            self.masks[name] = unpack_bits(packed[at:at + size], shape)
            at += size
        self.version = version


class MaskSync:
    def __init__(self, masks, root=0, group=None, device="cpu"):
        self.masks, self.root, self.group, self.device = masks, root, group, device
        self.rank = dist.get_rank(group)

    def _collective(self, what, fn, *args):
        try:
            return fn(*args, group=self.group)
        except RuntimeError as e:  # gloo: a peer closed the connection or the timeout passed
            raise MaskSyncError(f"rank {self.rank}: mask {what} failed, a rank is gone or late "
                                f"({str(e).splitlines()[0]})") from e

    def broadcast(self):
        """Collective: the root's masks (version, CRC-32 and packed bits) to every rank. The
        payload moves only when a rank's version differs from the root's."""
        packed = self.masks.pack()
        header = torch.tensor([self.masks.version, zlib.crc32(packed.numpy().tobytes()),
                               len(packed)], dtype=torch.int64, device=self.device)
        self._collective("broadcast", dist.broadcast, header, self.root)
        version, crc, size = (int(v) for v in header.tolist())
        differs = torch.tensor([int(version != self.masks.version)], device=self.device)
        self._collective("broadcast", dist.all_reduce, differs)
        if not differs.item():
            return False
        payload = packed.to(self.device) if self.rank == self.root else \
            torch.empty(size, dtype=torch.uint8, device=self.device)
        self._collective("broadcast", dist.broadcast, payload, self.root)
        payload = payload.cpu()
        if zlib.crc32(payload.numpy().tobytes()) != crc:
            raise MaskSyncError(f"rank {self.rank}: mask payload of version {version} fails "
                                "its CRC")
        if self.rank != self.root:
            self.masks.unpack(payload, version)
        return True

    def verify(self):
        """Collective: every rank's mask version and CRC against the root's. Raises StaleMasks
        on every rank (naming the stale ones) when they differ, so no rank runs alone."""
        packed = self.masks.pack()
        mine = torch.tensor([self.masks.version, zlib.crc32(packed.numpy().tobytes())],
                            dtype=torch.int64, device=self.device)
        world = dist.get_world_size(self.group)
        every = [torch.zeros_like(mine) for _ in range(world)]
        self._collective("check", dist.all_gather, every, mine)
        root = every[self.root].tolist()
        stale = [(r, v.tolist()) for r, v in enumerate(every) if v.tolist() != root]
        if stale:
            raise StaleMasks("masks differ from the root's (rank %d, version %d): %s; run "
                             "broadcast() after every change" % (
                                 self.root, root[0], ", ".join(
                                     f"rank {r} has version {v[0]}" + (
                                         " with other bits" if v[0] == root[0] else "")
                                     for r, v in stale)))
        return self.masks.version

    def guard(self, model):
        """Verifies before every forward call of `model` (a forward pre-hook); returns the
        hook's handle."""
        return model.register_forward_pre_hook(lambda m, inputs: self.verify() and None)
