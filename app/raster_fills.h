#pragma once
// Where Qt's raster paint engine fills pixels: on the painting thread, not in a thread pool.

namespace kvl::app {

// From this call on, every thread paints its own pixels: Qt's raster engine no longer splits a
// fill, blend or smooth scale of 96 rows or more across a thread pool and waits for it. Call it
// before QApplication, as kvledger's main does. KVL_QT_PARALLEL_FILLS=1 in the environment
// keeps Qt's default (returns false).
bool keepRasterFillsSerial();

// Whether keepRasterFillsSerial() is in force.
bool rasterFillsSerial();

} // namespace kvl::app
