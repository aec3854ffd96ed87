"""A Modbus device simulator on Debian's pymodbus, with the register map the modbus source's
tests check against (MAP below). Run as a process so a test can stop it (kill) and start it
again on the same port:

    python3 -m testing.modbus_sim --tcp 127.0.0.1:5020
    python3 -m testing.modbus_sim --rtu /dev/pts/7 --baud 19200   (8N2: pyserial cannot set
                                                                 even parity on a pty)

Units: 1 holds MAP; 2 the same map with every value plus one (two units behind one gateway);
3 holds only 10 holding registers, so reads past them answer ILLEGAL DATA ADDRESS.
Holding register 50 counts up once per --tick seconds (for report-by-exception)."""
import argparse
import asyncio
import logging
import struct
import sys

from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)

COUNTER = 305419896  # 0x12345678: a uint32 whose halves differ
VOLTAGE = 230.5       # float32 ABCD
FREQUENCY = 49.75     # float32 CDAB
SERIAL = "EM340-SIM-0042"  # 8 registers, ABCD, NUL padded
NEGATIVE = -1234567   # int32 CDAB in input registers
ENERGY = 9007199254740993  # int64 ABCD past a double's 53 bits
SPAN_START, SPAN_COUNT = 100, 300  # register i holds i (splits at 125)
COILS = [1, 0, 1, 1, 0, 0, 0, 1, 1, 1]
TICK_REGISTER = 50


def words_abcd32(fmt, value):
    raw = struct.pack(">" + fmt, value)
    return [int.from_bytes(raw[i:i + 2], "big") for i in range(0, len(raw), 2)]


def holding_map(bump=0):
    regs = [0] * 2000  # 400-1999 hold their address (bench/modbus.py reads 1,000 of them)
    regs[0:2] = words_abcd32("I", COUNTER + bump)
    regs[2:4] = words_abcd32("f", VOLTAGE + bump)
    hi, lo = words_abcd32("f", FREQUENCY + bump)
    regs[4:6] = [lo, hi]  # CDAB: the low word first
    text = SERIAL.encode().ljust(16, b"\0")
    regs[6:14] = [int.from_bytes(text[i:i + 2], "big") for i in range(0, 16, 2)]
    regs[14:18] = words_abcd32("q", ENERGY + bump)
    for i in range(SPAN_COUNT):
        regs[SPAN_START + i] = (SPAN_START + i + bump) & 0xFFFF
    for i in range(400, 2000):
        regs[i] = i
    return regs


def input_map(bump=0):
    hi, lo = words_abcd32("i", NEGATIVE - bump)
    return [lo, hi] + [0] * 8


def unit(bump):
    return ModbusSlaveContext(
        co=ModbusSequentialDataBlock(0, COILS + [0] * 6),
        di=ModbusSequentialDataBlock(0, [0] * 16),
        hr=ModbusSequentialDataBlock(0, holding_map(bump)),
        ir=ModbusSequentialDataBlock(0, input_map(bump)),
        zero_mode=True)


def context():
    small = ModbusSlaveContext(
        co=ModbusSequentialDataBlock(0, [0] * 10), di=ModbusSequentialDataBlock(0, [0] * 10),
        hr=ModbusSequentialDataBlock(0, list(range(10))),
        ir=ModbusSequentialDataBlock(0, [0] * 10), zero_mode=True)
    return ModbusServerContext(slaves={1: unit(0), 2: unit(1), 3: small}, single=False)


async def tick(ctx, every):
    n = 0
    while True:
        await asyncio.sleep(every)
        n += 1
        ctx[1].setValues(3, TICK_REGISTER, [n & 0xFFFF])


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tcp", help="host:port")
    ap.add_argument("--rtu", help="serial device")
    ap.add_argument("--baud", type=int, default=19200)
    ap.add_argument("--tick", type=float, default=1.0)
    a = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    ctx = context()
    asyncio.ensure_future(tick(ctx, a.tick))
    if a.tcp:
        from pymodbus.server import StartAsyncTcpServer
        host, port = a.tcp.rsplit(":", 1)
        server = await StartAsyncTcpServer(context=ctx, address=(host, int(port)),
                                           defer_start=True, allow_reuse_address=True)
        print("ready", flush=True)
        await server.serve_forever()
    else:
        from pymodbus.framer.rtu_framer import ModbusRtuFramer
        from pymodbus.server import StartAsyncSerialServer
        server = await StartAsyncSerialServer(context=ctx, framer=ModbusRtuFramer, port=a.rtu,
                                              baudrate=a.baud, bytesize=8, parity="N",
                                              stopbits=2, defer_start=True)
        await server.start()
        print("ready", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
