// SPDX-License-Identifier: MIT
pragma solidity 0.8.19;

// Brings Morpho Blue and its mocks (from the pinned npm package) into the devnet's build.
import {Morpho} from "@morpho-org/morpho-blue/src/Morpho.sol";
import {OracleMock} from "@morpho-org/morpho-blue/src/mocks/OracleMock.sol";
import {ERC20Mock} from "@morpho-org/morpho-blue/src/mocks/ERC20Mock.sol";
